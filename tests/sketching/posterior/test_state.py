r"""What a weight posterior reads from its state, through its updates."""

import pytest
import torch
from botorch.exceptions.errors import UnsupportedError
from helpers import rbf_kernel, residual_data

from botorch_sketch.sketching import (
    DTCStatistics,
    NystromEmbedding,
    WeightPosterior,
)


def test_data_variance_sum_is_the_data_variances_over_their_noise(tkwargs):
    # sum_i var(x_i) / lambda_i from tr(C) and the trace gap, through each
    # state: factorised, rank-q and rank-one updates (pending rows), a fold
    # of the pending rows, a grown coordinate, a refactorisation.
    k = rbf_kernel(0.3, outputscale=1.3)
    X, r, noise = residual_data(40, **tkwargs)

    def expected(emb, post, n):
        Z = emb(X[:n])
        return float(
            (post.variance(Z, emb.residual_variance(X[:n], Z)) / noise[:n]).sum()
        )

    emb = NystromEmbedding(k, X[:12])
    Z = emb(X)
    resid = emb.residual_variance(X, Z)
    post = WeightPosterior(
        DTCStatistics.from_embedded(Z[:20], resid[:20], r[:20], noise[:20])
    )
    assert post.data_variance_sum() == pytest.approx(expected(emb, post, 20), rel=1e-10)
    post.update(Z[20:30], resid[20:30], r[20:30], noise[20:30])
    assert post.data_variance_sum() == pytest.approx(expected(emb, post, 30), rel=1e-10)
    for i in range(30, 40):
        post.update_one_(Z[i], float(resid[i]), float(r[i]), float(noise[i]))
        n = i + 1
        assert post.data_variance_sum() == pytest.approx(
            expected(emb, post, n), rel=1e-10
        )
    post.statistics  # noqa: B018 (folds the pending rows)
    assert post.data_variance_sum() == pytest.approx(expected(emb, post, 40), rel=1e-10)
    # One more inducing point, the data's new coordinate given.
    grown = emb.extended(X[12])
    Zg = grown(X)
    post.extend_with_data(Z, Zg[:, -1], r, noise)
    assert post.data_variance_sum() == pytest.approx(
        expected(grown, post, 40), rel=1e-10
    )
    post.refactorise()
    assert post.data_variance_sum() == pytest.approx(
        expected(grown, post, 40), rel=1e-10
    )
    # Fantasy batches have one sum per batch: refused by name.
    post.update(
        Zg[None, :2].expand(3, 2, -1),
        grown.residual_variance(X[:2], Zg[:2]).expand(3, 2),
        r[:2].expand(3, 2),
        noise[:2].expand(3, 2),
    )
    with pytest.raises(UnsupportedError, match="unbatched"):
        post.data_variance_sum()


def test_statistics_read_before_an_extend_keep_their_values():
    # The gram matrix grows in place while no reader holds it. A posterior
    # read before every extend (so never in place) ends with the same
    # statistics, and the tensors a reader took are left as they were.
    g = torch.Generator().manual_seed(4)
    Z = torch.randn(20, 12, generator=g, dtype=torch.double)
    r = torch.randn(20, generator=g, dtype=torch.double)
    noise = torch.full((20,), 0.5, dtype=torch.double)
    post, read_often = (
        WeightPosterior.prior(1, like=Z),
        WeightPosterior.prior(1, like=Z),
    )
    taken = []
    for m in range(1, 12):
        # Read with nothing pending: the reader gets the grown gram itself.
        st = read_often.statistics
        taken.append((st, st.gram.clone(), st.moment.clone()))
        for p in (post, read_often):
            p.update_one_(Z[m, :m], 0.0, float(r[m]), 0.5)
            p.update_one_(Z[m + 8, :m], 0.0, float(r[m + 8]), 0.5)
            p.extend_with_data(Z[:, :m], Z[:, m], r, noise)
    for st, gram, moment in taken:
        assert torch.equal(st.gram, gram) and torch.equal(st.moment, moment)
    torch.testing.assert_close(post.statistics.gram, read_often.statistics.gram)
    torch.testing.assert_close(post.statistics.moment, read_often.statistics.moment)
    torch.testing.assert_close(post.weight_covariance, read_often.weight_covariance)
    B = torch.eye(12, dtype=torch.double) + post.statistics.gram
    torch.testing.assert_close(post.weight_covariance, torch.linalg.inv(B))
