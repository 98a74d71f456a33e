import math

import pytest
import torch
from helpers import exact_gp_posterior, rbf_kernel, residual_data

from botorch_sketch.sketching import (
    DTCReadout,
    DTCStatistics,
    NystromEmbedding,
    WeightPosterior,
    posterior_variance,
)


@pytest.mark.parametrize("heteroskedastic", [False, True])
def test_all_points_inducing_gives_the_exact_gp(heteroskedastic, tkwargs):
    k = rbf_kernel(0.3, outputscale=1.3, frozen=False)
    X, r, noise = residual_data(**tkwargs)
    if not heteroskedastic:
        noise = torch.full_like(noise, 0.1)
    Xt = torch.rand(7, 2, **tkwargs)
    with torch.no_grad():
        emb = NystromEmbedding(k, X)
        post = WeightPosterior(DTCStatistics.from_data(emb, X, r, noise))
        Zt = emb(Xt)
        mean, cov = post.mean(Zt), post.covariance(Zt, k(Xt).to_dense())
        exact_mean, exact_cov = exact_gp_posterior(k, X, r, noise, Xt, full_cov=True)
        var = post.variance(Zt, emb.residual_variance(Xt, Zt))
    torch.testing.assert_close(mean, exact_mean, rtol=1e-7, atol=1e-9)
    torch.testing.assert_close(cov, exact_cov, rtol=1e-7, atol=1e-9)
    torch.testing.assert_close(var, exact_cov.diagonal(), rtol=1e-7, atol=1e-9)


def test_log_marginal_likelihood_matches_dense_computation(tkwargs):
    k = rbf_kernel(0.3, outputscale=1.3, frozen=False)
    X, r, noise = residual_data(n=25, **tkwargs)
    S = X[:6]
    with torch.no_grad():
        emb = NystromEmbedding(k, S)
        stats = DTCStatistics.from_data(emb, X, r, noise)
        post = WeightPosterior(stats)
        Z = emb(X)
        cov = Z @ Z.mT + torch.diag(noise)
        dense = torch.distributions.MultivariateNormal(
            torch.zeros_like(r), cov
        ).log_prob(r)
        trace = ((k(X, diag=True) - Z.pow(2).sum(-1)) / noise).sum()
    torch.testing.assert_close(post.log_marginal_likelihood(titsias=False), dense)
    torch.testing.assert_close(
        post.log_marginal_likelihood(titsias=True), dense - 0.5 * trace
    )
    assert trace > 0  # six inducing points cannot explain 25 points' variance


def test_statistics_add_over_disjoint_data_and_chunks(tkwargs):
    k = rbf_kernel(0.3, outputscale=1.3, frozen=False)
    X, r, noise = residual_data(n=50, **tkwargs)
    emb = NystromEmbedding(k, X[:10])
    with torch.no_grad():
        whole = DTCStatistics.from_data(emb, X, r, noise)
        halves = DTCStatistics.from_data(
            emb, X[:20], r[:20], noise[:20]
        ) + DTCStatistics.from_data(emb, X[20:], r[20:], noise[20:])
        chunked = DTCStatistics.from_data(emb, X, r, noise, chunk_size=7)
    for other in (halves, chunked):
        for field in whole.__dataclass_fields__:
            torch.testing.assert_close(getattr(whole, field), getattr(other, field))


def test_chunked_gradients_equal_unchunked_gradients(tkwargs):
    # With gradients on, chunks are checkpointed: the gradient must not change.
    X, r, noise = residual_data(n=40, **tkwargs)
    grads = []
    for chunk_size in (None, 9):
        k = rbf_kernel(0.3, outputscale=1.3, frozen=False)
        emb = NystromEmbedding(k, X[:8])
        stats = DTCStatistics.from_data(emb, X, r, noise, chunk_size=chunk_size)
        WeightPosterior(stats).log_marginal_likelihood().backward()
        grads.append([p.grad.clone() for p in k.parameters()])
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b)


def test_covariances_are_psd_for_random_batches(tkwargs):
    torch.manual_seed(4)
    k = rbf_kernel(0.2, outputscale=1.3, frozen=False)
    X, r, noise = residual_data(n=60, **tkwargs)
    with torch.no_grad():
        for m in (1, 5, 20):
            emb = NystromEmbedding(k, X[torch.randperm(60)[:m]])
            post = WeightPosterior(DTCStatistics.from_data(emb, X, r, noise))
            Xt = torch.rand(8, 12, 2, **tkwargs)
            cov = post.covariance(emb(Xt), k(Xt).to_dense())
            assert cov.shape == (8, 12, 12)
            torch.testing.assert_close(cov, cov.mT)
            assert torch.linalg.eigvalsh(cov).min() > -1e-10


def test_batched_statistics_broadcast_like_fantasies(tkwargs):
    k = rbf_kernel(0.3, outputscale=1.3, frozen=False)
    X, r, noise = residual_data(n=20, **tkwargs)
    emb = NystromEmbedding(k, X[:5])
    with torch.no_grad():
        base = DTCStatistics.from_data(emb, X, r, noise)
        Xf = torch.rand(3, 2, 2, **tkwargs)  # batch 3, two new points each
        rf = torch.randn(4, 3, 2, **tkwargs)  # 4 fantasies
        new = DTCStatistics.from_data(emb, Xf, rf, torch.full_like(rf, 0.1))
        total = base + new
        assert total.batch_shape == (4, 3)
        # one batch element equals conditioning on that data alone
        single = base + DTCStatistics.from_data(
            emb, Xf[1], rf[2, 1], torch.full((2,), 0.1, **tkwargs)
        )
        torch.testing.assert_close(
            WeightPosterior(total).weights[2, 1], WeightPosterior(single).weights
        )


def test_variance_does_not_starve_far_from_the_inducing_set(tkwargs):
    # Paper 000, Fig. 1: data in [0, 0.5], lengthscale 0.07; far away, DTC keeps
    # the prior variance where subset-of-regressors collapses to zero.
    k = rbf_kernel(1 / math.sqrt(200), outputscale=1.0, frozen=False)
    g = torch.Generator().manual_seed(0)
    X = 0.5 * torch.rand(63, 1, generator=g, **tkwargs)
    noise = torch.full((63,), 0.01, **tkwargs)
    far = torch.linspace(0.8, 1.0, 50, **tkwargs).unsqueeze(-1)
    with torch.no_grad():
        emb = NystromEmbedding(k, X[:15])
        post = WeightPosterior(DTCStatistics.from_data(emb, X, torch.zeros(63), noise))
        dtc = posterior_variance(emb, post, far)
        Zf = emb(far)
        sor = post.variance(Zf, torch.zeros(50, **tkwargs))  # k(x,x) -> ||z||^2
        near = posterior_variance(emb, post, X)
    assert dtc.min() > 0.99
    assert sor.max() < 1e-3
    assert near.max() < 0.5


def test_variance_is_never_negative_in_float32():
    k = rbf_kernel(1.0, outputscale=1.3, frozen=False).float()
    X = torch.rand(200, 2)
    with torch.no_grad():
        emb = NystromEmbedding(k, X[:50])
        post = WeightPosterior(
            DTCStatistics.from_data(emb, X, torch.randn(200), torch.full((200,), 1e-4))
        )
        var = posterior_variance(emb, post, X)
    assert var.dtype == torch.float32
    assert var.min() >= 0


@pytest.mark.parametrize("inducing", [5, 30])
def test_readout_equals_embedding_and_posterior(inducing, tkwargs):
    # The folded readout is the same posterior as embedding + weight posterior,
    # for a factorised posterior, an online one after a Woodbury step, the
    # exact case (every input inducing) and batched test points.
    k = rbf_kernel(0.3, outputscale=1.3, frozen=False)
    X, r, noise = residual_data(n=30, **tkwargs)
    Xt = torch.rand(4, 6, 2, **tkwargs)
    with torch.no_grad():
        emb = NystromEmbedding(k, X[:inducing])
        post = WeightPosterior(DTCStatistics.from_data(emb, X, r, noise))
        online = WeightPosterior.from_posterior(post)
        Xn = torch.rand(3, 2, **tkwargs)
        online.absorb(
            emb, Xn, torch.randn(3, **tkwargs), torch.full((3,), 0.1, **tkwargs)
        )
        K = k(Xt).to_dense()
        Zt = emb(Xt)
        for state in (post, online):
            readout = DTCReadout(emb, state)
            assert readout.covariance_root is not None
            mean, cov = readout(Xt, K)
            torch.testing.assert_close(mean, state.mean(Zt), rtol=0, atol=1e-10)
            torch.testing.assert_close(cov, state.covariance(Zt, K), rtol=0, atol=1e-10)
        if inducing == 30:
            exact_mean, exact_cov = exact_gp_posterior(
                k, X, r, noise, Xt, full_cov=True
            )
            mean, cov = DTCReadout(emb, post)(Xt, K)
            torch.testing.assert_close(mean, exact_mean, rtol=1e-7, atol=1e-9)
            torch.testing.assert_close(cov, exact_cov, rtol=1e-7, atol=1e-9)


def test_readout_of_a_batched_posterior_reads_through_the_embedding(tkwargs):
    k = rbf_kernel(0.3, outputscale=1.3, frozen=False)
    X, r, noise = residual_data(n=20, **tkwargs)
    emb = NystromEmbedding(k, X[:5])
    with torch.no_grad():
        rf = r.expand(4, 20) + 0.1 * torch.randn(4, 20, **tkwargs)
        post = WeightPosterior(DTCStatistics.from_data(emb, X, rf, noise))
        readout = DTCReadout(emb, post)
        assert readout.covariance_root is None  # not folded per fantasy
        Xt = torch.rand(3, 2, **tkwargs)
        K = k(Xt).to_dense()
        mean, cov = readout(Xt, K)
        assert mean.shape == (4, 3)
        torch.testing.assert_close(mean, post.mean(emb(Xt)))
        torch.testing.assert_close(cov, post.covariance(emb(Xt), K))


def test_readout_of_an_empty_inducing_set_is_the_prior(tkwargs):
    k = rbf_kernel(0.3, outputscale=1.3, frozen=False)
    X, r, noise = residual_data(n=10, **tkwargs)
    emb = NystromEmbedding(k, X[:0])
    with torch.no_grad():
        post = WeightPosterior(DTCStatistics.from_data(emb, X, r, noise))
        Xt = torch.rand(3, 2, **tkwargs)
        K = k(Xt).to_dense()
        mean, cov = DTCReadout(emb, post)(Xt, K)
    torch.testing.assert_close(mean, torch.zeros(3, **tkwargs))
    torch.testing.assert_close(cov, K)


def test_readout_means_fold_no_covariance(tkwargs):
    # Means alone cost one product per posterior: the eigendecomposition of
    # the covariance waits for the first covariance read, whose means agree.
    k = rbf_kernel(0.3, outputscale=1.3, frozen=False)
    X, r, noise = residual_data(n=30, **tkwargs)
    Xt = torch.rand(4, 6, 2, **tkwargs)
    with torch.no_grad():
        emb = NystromEmbedding(k, X[:10])
        readout = DTCReadout(
            emb, WeightPosterior(DTCStatistics.from_data(emb, X, r, noise))
        )
        mean = readout.mean(Xt)
        assert readout._root is None
        full_mean, _ = readout(Xt, k(Xt).to_dense())
        assert readout._root is not None
    assert torch.equal(mean, full_mean)
