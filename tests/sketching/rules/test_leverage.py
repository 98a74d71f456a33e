import math
import warnings

import pytest
import torch
from botorch.exceptions.errors import InputDataError
from helpers import exact_gp_posterior, rbf_kernel

from botorch_sketch.sketching import (
    Candidates,
    DTCStatistics,
    InducingSetCapWarning,
    NystromEmbedding,
    RidgeLeverageSampler,
    WeightPosterior,
    expected_size,
    leverage_scores,
    posterior_variance,
)


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _pool(X, k, noise, counts=None):
    return Candidates(X=X, kernel=k, noise=noise, counts=counts)


def _dtc_variance(k, X, noise, idx):
    emb = NystromEmbedding(k, X[idx])
    post = WeightPosterior(
        DTCStatistics.from_data(emb, X, torch.zeros_like(noise), noise)
    )
    return posterior_variance(emb, post, X)


@pytest.mark.parametrize("seed", range(4))
def test_bkb_sets_keep_variances_within_a_factor_three(seed, tkwargs):
    # Theorem 1 of paper 000 with alpha = 3, in the setting of notes/bkb.md.
    k = rbf_kernel(0.1, outputscale=1.0, frozen=False)
    X = torch.rand(600, 1, generator=_gen(100 + seed), **tkwargs)
    noise = torch.full((600,), 0.01, **tkwargs)
    with torch.no_grad():
        idx = RidgeLeverageSampler(qbar=10, generator=_gen(seed)).select(
            _pool(X, k, noise)
        )
        exact = exact_gp_posterior(k, X, torch.zeros_like(noise), noise, X)[1]
        ratio = _dtc_variance(k, X, noise, idx) / exact
    d_eff = float((exact / noise).sum())  # tr(K (K + lambda I)^-1)
    assert idx.numel() < 2 * 10 * d_eff < 600  # the set follows d_eff, not n
    assert ratio.min() > 1 / 3 and ratio.max() < 3


def test_resampled_size_is_close_to_the_sum_of_probabilities(tkwargs):
    k = rbf_kernel(0.1, outputscale=1.0, frozen=False)
    X = torch.rand(400, 1, generator=_gen(0), **tkwargs)
    noise = torch.full((400,), 0.01, **tkwargs)
    counts = torch.randint(1, 4, (400,), generator=_gen(1))
    sampler = RidgeLeverageSampler(qbar=2, generator=_gen(2))
    with torch.no_grad():
        current = sampler.select(_pool(X, k, noise, counts))
        p = sampler.inclusion_probabilities(_pool(X, k, noise, counts), current)
        keep = 1 - (1 - p).pow(counts)
        sizes = torch.tensor(
            [
                sampler.resample(_pool(X, k, noise, counts), current).numel()
                for _ in range(40)
            ],
            dtype=torch.double,
        )
    mean, sd = expected_size(p, counts), math.sqrt(float((keep * (1 - keep)).sum()))
    assert 1 < mean < 400
    assert abs(sizes.mean() - mean) < 3 * sd / math.sqrt(40) + 0.5
    assert (sizes - mean).abs().max() < 5 * sd + 1


def test_repeated_observations_raise_inclusion(tkwargs):
    k = rbf_kernel(0.1, outputscale=1.0, frozen=False)
    X = torch.rand(100, 1, generator=_gen(0), **tkwargs)
    noise = torch.full((100,), 0.01, **tkwargs)
    sampler = RidgeLeverageSampler(qbar=0.5)
    current = torch.arange(0, 100, 10)
    with torch.no_grad():
        once = expected_size(
            sampler.inclusion_probabilities(_pool(X, k, noise), current)
        )
        counts = torch.full((100,), 5)
        p = sampler.inclusion_probabilities(_pool(X, k, noise, counts), current)
    assert expected_size(p, counts) > once


def test_sampler_is_deterministic_under_a_seed_and_never_empty(tkwargs):
    k = rbf_kernel(0.1, outputscale=1.0, frozen=False)
    X = torch.rand(200, 2, generator=_gen(0), **tkwargs)
    noise = torch.full((200,), 0.1, **tkwargs)
    a = RidgeLeverageSampler(qbar=3, generator=_gen(7)).select(_pool(X, k, noise))
    b = RidgeLeverageSampler(qbar=3, generator=_gen(7)).select(_pool(X, k, noise))
    c = RidgeLeverageSampler(qbar=3, generator=_gen(8)).select(_pool(X, k, noise))
    assert torch.equal(a, b) and not torch.equal(a, c)
    tiny = RidgeLeverageSampler(qbar=1e-9, generator=_gen(0)).select(_pool(X, k, noise))
    assert tiny.numel() == 1


def test_large_qbar_keeps_every_point(tkwargs):
    k = rbf_kernel(0.1, outputscale=1.0, frozen=False)
    X = torch.rand(50, 2, generator=_gen(0), **tkwargs)
    noise = torch.full((50,), 0.01, **tkwargs)
    idx = RidgeLeverageSampler(qbar=1e8, generator=_gen(0)).select(_pool(X, k, noise))
    assert idx.numel() == 50


def test_cap_scales_qbar_and_warns(tkwargs):
    k = rbf_kernel(0.02, outputscale=1.0, frozen=False)
    X = torch.rand(500, 1, generator=_gen(0), **tkwargs)
    noise = torch.full((500,), 1e-3, **tkwargs)
    sampler = RidgeLeverageSampler(qbar=10, max_size=40, generator=_gen(1))
    with pytest.warns(InducingSetCapWarning):
        idx = sampler.select(_pool(X, k, noise))
    assert idx.numel() < 60


def test_a_cap_without_a_warning_draws_the_same_set(tkwargs):
    k = rbf_kernel(0.02, outputscale=1.0, frozen=False)
    X = torch.rand(500, 1, generator=_gen(0), **tkwargs)
    noise = torch.full((500,), 1e-3, **tkwargs)
    loud = RidgeLeverageSampler(qbar=10, max_size=40, generator=_gen(1))
    quiet = RidgeLeverageSampler(
        qbar=10, max_size=40, generator=_gen(1), warn_at_cap=False
    )
    with pytest.warns(InducingSetCapWarning):
        expected = loud.select(_pool(X, k, noise))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idx = quiet.select(_pool(X, k, noise))
    assert not [w for w in caught if issubclass(w.category, InducingSetCapWarning)]
    assert torch.equal(idx, expected)
    with pytest.raises(InputDataError, match="warn_at_cap"):
        RidgeLeverageSampler(warn_at_cap="no")


def test_leverage_scores_are_bounded_by_prior_over_noise(tkwargs):
    k = rbf_kernel(0.1, outputscale=1.0, frozen=False)
    X = torch.rand(60, 1, generator=_gen(0), **tkwargs)
    noise = torch.full((60,), 0.05, **tkwargs)
    scores = leverage_scores(X, k, noise, None, torch.arange(5))
    assert scores.min() >= 0 and scores.max() <= 1.0 / 0.05 + 1e-9


@pytest.mark.parametrize("qbar", [0.0, -1.0, float("nan"), float("inf")])
def test_ridge_leverage_sampler_rejects_a_bad_qbar(qbar):
    # NaN fails every comparison, so a ``qbar <= 0`` check let it through.
    with pytest.raises(InputDataError, match="qbar must be finite and positive"):
        RidgeLeverageSampler(qbar=qbar)


def test_sampler_rejects_bad_configuration():
    with pytest.raises(InputDataError, match="max_size"):
        RidgeLeverageSampler(max_size=0)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: RidgeLeverageSampler(max_size=float("nan")), "max_size must be an"),
        (lambda: RidgeLeverageSampler(max_size=True), "max_size must be an"),
        (lambda: RidgeLeverageSampler(max_size=2.5), "max_size must be an"),
        (lambda: RidgeLeverageSampler(num_passes=-1), "num_passes must be an"),
        (lambda: RidgeLeverageSampler(initial_size=0), "initial_size must be an"),
    ],
)
def test_settings_that_passed_comparisons_are_named(make, match):
    # NaN failed every comparison and passed; True capped a set at one point
    # and 2.5 at three; float sizes failed in a slice or ``new_empty``.
    with pytest.raises(InputDataError, match=match):
        make()
    # Integer types other than int are counts too.
    assert RidgeLeverageSampler(max_size=torch.tensor(7)).max_size == 7
