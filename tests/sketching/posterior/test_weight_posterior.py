r"""The one weight posterior: its factorised and updated states read alike."""

import pytest
import torch
from botorch.exceptions.errors import UnsupportedError
from helpers import rbf_kernel, residual_data

from botorch_sketch.sketching import (
    DTCStatistics,
    EmbeddedPoints,
    NystromEmbedding,
    WeightPosterior,
)


def test_updated_and_factorised_states_read_the_same(tkwargs):
    # Half the data factorised, the other half by Woodbury steps (one rank-q,
    # then rank-one in place): every read-out equals a fresh factorisation.
    k = rbf_kernel(0.3, outputscale=1.3)
    X, r, noise = residual_data(40, **tkwargs)
    emb = NystromEmbedding(k, X[:12])
    Z = emb(X)
    resid = emb.residual_variance(X, Z)
    post = WeightPosterior(
        DTCStatistics.from_embedded(Z[:20], resid[:20], r[:20], noise[:20])
    )
    post.update(Z[20:30], resid[20:30], r[20:30], noise[20:30])
    for i in range(30, 40):
        post.update_one_(Z[i], float(resid[i]), float(r[i]), float(noise[i]))
    fresh = WeightPosterior(DTCStatistics.from_data(emb, X, r, noise))
    Xt = torch.rand(3, 5, 2, **tkwargs)
    Zt, Kt = emb(Xt), k(Xt).to_dense()
    rt = emb.residual_variance(Xt, Zt)
    torch.testing.assert_close(post.mean(Zt), fresh.mean(Zt), rtol=0, atol=1e-10)
    torch.testing.assert_close(
        post.variance(Zt, rt), fresh.variance(Zt, rt), rtol=0, atol=1e-10
    )
    torch.testing.assert_close(
        post.covariance(Zt, Kt), fresh.covariance(Zt, Kt), rtol=0, atol=1e-10
    )
    torch.testing.assert_close(
        post.log_marginal_likelihood(),
        fresh.log_marginal_likelihood(),
        rtol=1e-10,
        atol=1e-10,
    )
    w0 = torch.randn(4, emb.dim, **tkwargs)
    gen = [torch.Generator().manual_seed(1) for _ in range(2)]
    torch.testing.assert_close(
        post.matheron_update(w0, gen[0]),
        fresh.matheron_update(w0, gen[1]),
        rtol=0,
        atol=1e-9,
    )
    # The variance is the diagonal of the covariance, the cross covariance its block.
    torch.testing.assert_close(
        fresh.covariance(Zt, Kt).diagonal(dim1=-2, dim2=-1), fresh.variance(Zt, rt)
    )
    cross = fresh.cross_covariance(Zt[0], Zt[0, :2], Kt[0, :, :2])
    torch.testing.assert_close(cross, fresh.covariance(Zt[0], Kt[0])[:, :2])


def test_fantasy_batches_fold_test_batches_without_changing_values(tkwargs):
    # A posterior batched over fantasies, read at test points with more batch
    # dimensions: equal to reading each fantasy's posterior alone.
    k = rbf_kernel(0.3, outputscale=1.3)
    X, r, noise = residual_data(25, **tkwargs)
    emb = NystromEmbedding(k, X[:8])
    post = WeightPosterior(DTCStatistics.from_data(emb, X, r, noise))
    Xn = torch.rand(2, 2, **tkwargs)
    rn = torch.randn(4, 2, **tkwargs)
    fantasies = post.copy()
    # Batched inputs: the update stays a batched downdate of C.
    fantasies.absorb(emb, Xn.expand(4, 2, 2), rn, torch.full((4, 2), 0.1, **tkwargs))
    assert fantasies.batch_shape == (4,) and fantasies._downdate is not None
    # A refit of the same data factorises a batched Cholesky: the other state.
    refit = WeightPosterior(
        DTCStatistics.from_data(
            emb,
            torch.cat([X, Xn]),
            torch.cat([r.expand(4, -1), rn], -1),
            torch.cat([noise, torch.full((2,), 0.1, **tkwargs)]),
        )
    )
    Xt = torch.rand(6, 4, 3, 2, **tkwargs)
    Zt, Kt = emb(Xt), k(Xt).to_dense()
    for state in (fantasies, refit):
        cov = state.covariance(Zt, Kt)
        assert cov.shape == (6, 4, 3, 3)
        for j in range(4):
            one = WeightPosterior(
                DTCStatistics.from_data(
                    emb,
                    torch.cat([X, Xn]),
                    torch.cat([r, rn[j]]),
                    torch.cat([noise, torch.full((2,), 0.1, **tkwargs)]),
                )
            )
            torch.testing.assert_close(
                cov[:, j], one.covariance(Zt[:, j], Kt[:, j]), rtol=0, atol=1e-10
            )
    with pytest.raises(UnsupportedError, match="cannot grow"):
        fantasies.extend()
    with pytest.raises(UnsupportedError, match="update_one_"):
        fantasies.update_one_(Zt[0, 0, 0], 0.0, 0.0, 0.1)


def test_chunked_variance_equals_the_unchunked_one(tkwargs):
    k = rbf_kernel(0.3, outputscale=1.3)
    X, r, noise = residual_data(50, **tkwargs)
    emb = NystromEmbedding(k, X[:10])
    post = WeightPosterior(DTCStatistics.from_data(emb, X, r, noise))
    points = EmbeddedPoints(emb, X, chunk_size=7)
    whole = post.variance(emb(X), emb.residual_variance(X))
    torch.testing.assert_close(points.posterior_variance(post), whole)
    assert post.chunked_variance(0, 7, None).shape == (0,)


def test_extend_repeatedly_keeps_the_covariance_and_leaves_copies_apart():
    # Many coordinates added in a row (C grows inside its buffer), updates in
    # between, and a copy taken mid-way: C stays the inverse of I + gram, and
    # the copy keeps its own C.
    g = torch.Generator().manual_seed(2)
    Z = torch.randn(30, 40, generator=g, dtype=torch.double)
    r = torch.randn(30, generator=g, dtype=torch.double)
    noise = torch.full((30,), 0.5, dtype=torch.double)
    post = WeightPosterior.prior(1, like=Z)
    for i in range(30):
        post.update_one_(Z[i, :1], 0.0, float(r[i]), 0.5)
    copy = None
    for m in range(1, 40):
        post.extend_with_data(Z[:, :m], Z[:, m], r, noise)
        if m == 20:
            copy = post.copy()
            kept = copy.weight_covariance.clone()
        if m % 7 == 0:
            post.update_one_(Z[m % 30, : m + 1], 0.0, 0.3, 0.5)
    B = torch.eye(40, dtype=torch.double) + post.statistics.gram
    torch.testing.assert_close(post.weight_covariance, torch.linalg.inv(B))
    torch.testing.assert_close(
        post.weights, torch.linalg.solve(B, post.statistics.moment)
    )
    assert torch.equal(copy.weight_covariance, kept)


def test_extend_grows_the_covariance_inside_one_buffer():
    # Consecutive extends (with rank-one updates between them) write C into the
    # spare rows and columns of its buffer: a new buffer only when it is full,
    # not an m x m allocation and copy per coordinate.
    g = torch.Generator().manual_seed(3)
    Z = torch.randn(30, 60, generator=g, dtype=torch.double)
    r = torch.randn(30, generator=g, dtype=torch.double)
    noise = torch.full((30,), 0.5, dtype=torch.double)
    post = WeightPosterior.prior(1, like=Z)
    buffers = set()
    for m in range(1, 60):
        post.update_one_(Z[m % 30, :m], 0.0, float(r[m % 30]), 0.5)
        post.extend_with_data(Z[:, :m], Z[:, m], r, noise)
        buffers.add(post.weight_covariance.data_ptr())
    # Capacities 18, 34, 50, 75: four buffers for 59 coordinates.
    assert len(buffers) <= 4
    B = torch.eye(60, dtype=torch.double) + post.statistics.gram
    torch.testing.assert_close(post.weight_covariance, torch.linalg.inv(B))
