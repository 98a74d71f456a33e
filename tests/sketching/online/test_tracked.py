import pytest
import torch
from botorch.exceptions.errors import UnsupportedError
from helpers import exact_gp_posterior, rbf_kernel

from botorch_sketch.sketching import DTCStatistics, NystromEmbedding, WeightPosterior
from botorch_sketch.sketching.online.tracked import TrackedCandidates


def _from_scratch(embedding, X, r, noise, candidates):
    stats = DTCStatistics.from_data(embedding, X, r, noise)
    post = WeightPosterior(stats)
    Z = embedding(candidates)
    mean = post.mean(Z)
    var = post.variance(Z, embedding.residual_variance(candidates, Z))
    return post, mean, var


def test_thousand_rank_one_updates_match_a_fresh_factorisation(tkwargs):
    g = torch.Generator().manual_seed(0)
    k = rbf_kernel(0.3, outputscale=1.3)
    S = torch.rand(25, 2, generator=g, **tkwargs)
    emb = NystromEmbedding(k, S)
    cands = torch.rand(300, 2, generator=g, **tkwargs)
    X = torch.rand(1000, 2, generator=g, **tkwargs)
    r = torch.randn(1000, generator=g, **tkwargs)
    noise = 0.01 + 0.1 * torch.rand(1000, generator=g, **tkwargs)
    online = WeightPosterior.prior(emb.dim, like=S)
    tracked = TrackedCandidates(emb, online, cands, chunk_size=64)
    for i in range(1000):
        z = emb(X[i : i + 1])
        update = online.update(
            z, emb.residual_variance(X[i : i + 1], z), r[i : i + 1], noise[i : i + 1]
        )
        tracked.apply(update)
    post, mean, var = _from_scratch(emb, X, r, noise, cands)
    assert torch.allclose(online.weights, post.weights, atol=1e-8)
    assert torch.allclose(tracked.mean, mean, atol=1e-8)
    assert torch.allclose(tracked.variance, var, atol=1e-8)
    # The statistics were kept alongside: refactorising changes nothing visible.
    online.refactorise()
    tracked.refresh(online)
    assert torch.allclose(tracked.variance, var, atol=1e-10)


def test_batch_update_equals_sequential_updates(tkwargs):
    g = torch.Generator().manual_seed(1)
    emb = NystromEmbedding(
        rbf_kernel(0.3, outputscale=1.3), torch.rand(10, 3, generator=g, **tkwargs)
    )
    cands = torch.rand(50, 3, generator=g, **tkwargs)
    X = torch.rand(5, 3, generator=g, **tkwargs)
    r = torch.randn(5, generator=g, **tkwargs)
    noise = torch.full((5,), 0.1, **tkwargs)
    Z = emb(X)
    resid = emb.residual_variance(X, Z)
    a, b = (
        WeightPosterior.prior(emb.dim, like=X),
        WeightPosterior.prior(emb.dim, like=X),
    )
    ta, tb = TrackedCandidates(emb, a, cands), TrackedCandidates(emb, b, cands)
    ta.apply(a.update(Z, resid, r, noise))
    for i in range(5):
        tb.apply(
            b.update(Z[i : i + 1], resid[i : i + 1], r[i : i + 1], noise[i : i + 1])
        )
    assert torch.allclose(ta.mean, tb.mean, atol=1e-12)
    assert torch.allclose(ta.variance, tb.variance, atol=1e-12)


def test_covariance_column_is_the_dtc_posterior_covariance(tkwargs):
    g = torch.Generator().manual_seed(2)
    k = rbf_kernel(0.3, outputscale=1.3)
    emb = NystromEmbedding(k, torch.rand(10, 2, generator=g, **tkwargs))
    cands = torch.rand(40, 2, generator=g, **tkwargs)
    X = torch.rand(30, 2, generator=g, **tkwargs)
    noise = torch.full((30,), 0.1, **tkwargs)
    online = WeightPosterior(
        DTCStatistics.from_data(emb, X, torch.randn(30, **tkwargs), noise)
    )
    tracked = TrackedCandidates(emb, online, cands)
    post = WeightPosterior(online.statistics)
    cov = post.covariance(emb(cands), k(cands).to_dense())
    for j in (0, 17):
        assert torch.allclose(
            tracked.covariance_column(j, online), cov[:, j], atol=1e-10
        )
    assert torch.allclose(cov.diagonal(), tracked.variance, atol=1e-10)


def test_growing_the_inducing_set_with_observed_points_stays_exact(tkwargs):
    # Every observed input is an inducing point, added as it arrives: the tracked
    # posterior must equal the exact GP at every candidate.
    g = torch.Generator().manual_seed(3)
    k = rbf_kernel(0.2, outputscale=1.3)
    cands = torch.rand(200, 2, generator=g, **tkwargs)
    order = torch.randint(200, (60,), generator=g)
    r = torch.randn(60, generator=g, **tkwargs)
    noise = 0.05
    emb = NystromEmbedding(k, cands[:0])
    online = WeightPosterior.prior(0, like=cands)
    tracked = TrackedCandidates(emb, online, cands, chunk_size=32)
    seen = set()
    for i, j in enumerate(order.tolist()):
        if j not in seen:
            seen.add(j)
            grown = emb.extended(cands[j])
            if grown is not None:
                emb = grown
                tracked.extend_embedding(grown)
                tracked.apply_border(online.extend())
        z = tracked.Z[j : j + 1]
        tracked.apply(
            online.update(
                z,
                tracked.residual[j : j + 1],
                r[i : i + 1],
                cands.new_full((1,), noise),
            )
        )
    X = cands[order]
    mean, var = exact_gp_posterior(k, X, r, noise, cands)
    assert tracked.dim == len(seen)
    assert torch.allclose(tracked.mean, mean, atol=1e-8)
    assert torch.allclose(tracked.variance, var, atol=1e-8)
    # The grown embedding is the embedding of the grown set.
    fresh = NystromEmbedding(k, emb.inducing_points)
    Zf = fresh(cands)
    assert torch.allclose(tracked.Z @ tracked.Z.mT, Zf @ Zf.mT, atol=1e-8)


@pytest.mark.parametrize("q", [1, 3])
def test_updates_with_an_empty_inducing_set_keep_the_prior(q, tkwargs):
    # An empty inducing set: updates leave the prior in place.
    cands = torch.rand(10, 2, **tkwargs)
    emb = NystromEmbedding(rbf_kernel(0.3, outputscale=1.3), cands[:0])
    online = WeightPosterior.prior(0, like=cands)
    tracked = TrackedCandidates(emb, online, cands)
    z = tracked.Z[:q]
    tracked.apply(
        online.update(
            z,
            tracked.residual[:q],
            torch.ones(q, **tkwargs),
            torch.full((q,), 0.1, **tkwargs),
        )
    )
    assert torch.allclose(tracked.variance, torch.full((10,), 1.3, **tkwargs))
    assert torch.equal(tracked.mean, torch.zeros(10, **tkwargs))


def test_growing_with_data_along_the_new_coordinate_matches_a_fresh_posterior(tkwargs):
    # KORS / adaptive BKB: the new inducing point is not in the span of the data.
    g = torch.Generator().manual_seed(4)
    k = rbf_kernel(0.25, outputscale=1.3)
    emb = NystromEmbedding(k, torch.rand(8, 2, generator=g, **tkwargs))
    X = torch.rand(60, 2, generator=g, **tkwargs)
    r = torch.randn(60, generator=g, **tkwargs)
    noise = 0.02 + 0.1 * torch.rand(60, generator=g, **tkwargs)
    cands = torch.rand(100, 2, generator=g, **tkwargs)
    online = WeightPosterior(DTCStatistics.from_data(emb, X, r, noise))
    tracked = TrackedCandidates(emb, online, cands)
    grown = emb.extended(X[0])
    assert grown is not None
    tracked.extend_embedding(grown)
    Z_old = emb(X)
    tracked.apply_border(online.extend_with_data(Z_old, grown(X)[:, -1], r, noise))
    post, mean, var = _from_scratch(grown, X, r, noise, cands)
    assert torch.allclose(online.weights, post.weights, atol=1e-9)
    assert torch.allclose(tracked.mean, mean, atol=1e-9)
    assert torch.allclose(tracked.variance, var, atol=1e-9)
    fresh = DTCStatistics.from_data(grown, X, r, noise)
    assert torch.allclose(online.statistics.trace_gap, fresh.trace_gap, atol=1e-9)


def _pair(tkwargs, lazy_pulls, seed=5, num_candidates=400, num_inducing=20):
    # The same candidates tracked eagerly and with held updates.
    g = torch.Generator().manual_seed(seed)
    emb = NystromEmbedding(
        rbf_kernel(0.3, outputscale=1.3),
        torch.rand(num_inducing, 2, generator=g, **tkwargs),
    )
    cands = torch.rand(num_candidates, 2, generator=g, **tkwargs)
    eager_post = WeightPosterior.prior(emb.dim, like=cands)
    lazy_post = WeightPosterior.prior(emb.dim, like=cands)
    eager = TrackedCandidates(emb, eager_post, cands)
    lazy = TrackedCandidates(emb, lazy_post, cands)
    lazy.lazy_pulls = lazy_pulls
    return g, emb, cands, (eager, eager_post), (lazy, lazy_post)


def _pull(tracked, post, cands, i, reward, noise=0.01):
    z, resid = tracked.Z[i], float(tracked.residual[i])
    P, s, coefficient = post.update_one_(z, resid, reward, noise)
    tracked.apply_one(P, s, coefficient, q=s - noise)


def test_held_updates_give_the_eager_means_variances_and_argmax(tkwargs):
    g, _, cands, (eager, ep), (lazy, lp) = _pair(tkwargs, lazy_pulls=7)
    buffer = torch.empty(cands.shape[0], **tkwargs)
    for _ in range(60):
        for alpha in (0.0, 0.3, 3.0):
            exact = eager.mean + alpha * eager.variance.sqrt()
            # The argmax from bounds is the exact one (ties: none in this draw).
            assert int(lazy.ucb_argmax(alpha, buffer)) == int(exact.argmax())
        some = torch.randint(cands.shape[0], (5,), generator=g).to(tkwargs["device"])
        assert torch.allclose(lazy.variance_at(some), eager.variance[some], atol=1e-12)
        i, reward = int(some[0]), float(torch.randn(1, generator=g))
        _pull(eager, ep, cands, i, reward)
        held = lazy.num_held
        _pull(lazy, lp, cands, i, reward)
        # Flushed at 7 held, or earlier by a loose bound in ucb_argmax.
        assert lazy.num_held <= (held + 1) % 7
    for _ in range(3):
        i = int(torch.randint(cands.shape[0], (1,), generator=g))
        _pull(eager, ep, cands, i, 0.5)
        _pull(lazy, lp, cands, i, 0.5)
    assert lazy.num_held >= 3
    # Reading the means applies every held update first.
    assert torch.allclose(lazy.mean, eager.mean, atol=1e-12)
    assert lazy.num_held == 0
    assert torch.allclose(lazy.variance, eager.variance, atol=1e-12)


def test_held_scores_never_exceed_their_bound(tkwargs):
    # The bound ``mean + (alpha + drift) sd`` at the last flush holds for every
    # candidate, or the argmax could miss the best one.
    g, _, cands, _, (lazy, lp) = _pair(tkwargs, lazy_pulls=0, num_inducing=30)
    f = (6 * cands).sin().sum(-1)
    alpha = 0.5
    for step in range(210):
        if step == 200:  # a posterior that has seen data, then held pulls
            lazy.lazy_pulls = 1000
        i = int(torch.randint(cands.shape[0], (1,), generator=g))
        _pull(lazy, lp, cands, i, float(f[i] + 0.1 * torch.randn(1, generator=g)))
        if step < 200:
            continue
        bound = lazy._mean + (alpha + lazy._held_drift) * lazy._variance.sqrt()
        index = torch.arange(cands.shape[0], device=cands.device)
        exact = lazy._exact_scores(index, alpha)
        assert bool((exact <= bound + 1e-12).all())
    # The bound is not vacuous: it leaves most candidates out here.
    assert lazy.num_held == 10
    first = lazy._exact_scores(exact.argmax().reshape(1), alpha)
    assert float((bound >= first).double().mean()) < 0.5


def test_changing_the_embedding_applies_held_updates_first(tkwargs):
    g, emb, cands, (eager, ep), (lazy, lp) = _pair(tkwargs, lazy_pulls=50)
    for _ in range(5):
        i = int(torch.randint(cands.shape[0], (1,), generator=g))
        reward = float(torch.randn(1, generator=g))
        _pull(eager, ep, cands, i, reward)
        _pull(lazy, lp, cands, i, reward)
    grown = emb.extended(cands[0])
    assert lazy.num_held == 5
    for tracked in (eager, lazy):
        tracked.extend_embedding(grown)
    assert lazy.num_held == 0
    assert torch.allclose(lazy.mean, eager.mean, atol=1e-12)
    with pytest.raises(UnsupportedError, match="fixed candidate set"):
        lazy.append(cands[0], lazy.Z[0], lazy.prior_variance[:1])
