r"""Property tests of ``NystromGP`` on random data and hyperparameters (issue 15).

Each example draws ``n <= 60`` points in ``d <= 4`` dimensions (spread out, or in
one to three tight clusters), a lengthscale in ``[1e-3, 1e3]``, a noise variance
in ``[1e-6, 1e2]`` and float32 or float64, and sets the hyperparameters directly
(no fitting), so an example costs 10-50 ms.

Three settings profiles, all derandomised (the same examples on every run):

- ``dev`` (default): 25 examples per property, for the ordinary local suite;
- ``ci`` (loaded when the ``CI`` environment variable is set): 200 examples per
  property, the whole file in about 15 s on 2 shared cores;
- ``full``: 1000 per property, about 1.5 minutes.

Run the 200-case version with::

    CI=1 OMP_NUM_THREADS=1 python -m pytest tests/models/test_nystrom_properties.py

(or ``HYPOTHESIS_PROFILE=ci``; ``HYPOTHESIS_PROFILE`` overrides the choice by
``CI``). The profiles are applied to these tests only, as decorators, so other
hypothesis tests keep their own settings.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
from botorch.models import SingleTaskGP
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import RBFKernel
from gpytorch.likelihoods import GaussianLikelihood
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import Tensor

from botorch_sketch import NystromGP

_HEALTH = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
settings.register_profile(
    "dev",
    derandomize=True,
    max_examples=25,
    deadline=None,
    suppress_health_check=_HEALTH,
)
settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=200,
    deadline=None,
    suppress_health_check=_HEALTH,
)
settings.register_profile(
    "full",
    derandomize=True,
    max_examples=1000,
    deadline=None,
    suppress_health_check=_HEALTH,
)
_PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or (
    "ci" if os.environ.get("CI") else "dev"
)
#: The decorator applying the chosen profile to each property.
profile = settings(settings.get_profile(_PROFILE))


@dataclass
class Case:
    r"""One random problem: data, hyperparameters, test points."""

    X: Tensor
    Y: Tensor
    Xt: Tensor
    lengthscale: float
    noise: float

    @property
    def dtype(self) -> torch.dtype:
        r"""The floating point type of the data."""
        return self.X.dtype

    def on(self, tkwargs: dict) -> Case:
        r"""The same case on the device of ``tkwargs`` (the dtype stays drawn)."""
        device = tkwargs["device"]
        return Case(
            self.X.to(device),
            self.Y.to(device),
            self.Xt.to(device),
            self.lengthscale,
            self.noise,
        )


@st.composite
def cases(draw, dtypes=(torch.float32, torch.float64), min_n=2, clusters=True) -> Case:
    r"""A random problem; torch draws the tensors from a hypothesis-drawn seed."""
    dtype = draw(st.sampled_from(dtypes))
    n = draw(st.integers(min_n, 60))
    d = draw(st.integers(1, 4))
    q = draw(st.integers(1, 4))
    lengthscale = 10.0 ** draw(st.floats(-3, 3))
    noise = 10.0 ** draw(st.floats(-6, 2))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    X = torch.rand(n, d, generator=g, dtype=torch.float64)
    if clusters and draw(st.booleans()):
        # Tight clusters: K_SS numerically singular, as in BO's late iterations.
        centres = torch.rand(draw(st.integers(1, 3)), d, generator=g, dtype=X.dtype)
        spread = 10.0 ** draw(st.floats(-3, -1))
        pick = torch.arange(n) % centres.shape[0]
        X = centres[pick] + spread * torch.randn(n, d, generator=g, dtype=X.dtype)
    # Some duplicated inputs and a smooth signal plus noise.
    if n > 4 and draw(st.booleans()):
        X[: n // 4] = X[n // 4 : 2 * (n // 4)]
    Y = torch.sin(5 * X).sum(-1, keepdim=True) + 0.1 * torch.randn(
        n, 1, generator=g, dtype=torch.float64
    )
    # Test points near and away from the data.
    Xt = torch.cat(
        [
            X[:q] + 0.01 * torch.randn(X[:q].shape[0], d, generator=g, dtype=X.dtype),
            torch.rand(q, d, generator=g, dtype=X.dtype),
        ]
    )
    return Case(X.to(dtype), Y.to(dtype), Xt.to(dtype), lengthscale, noise)


def _likelihood() -> GaussianLikelihood:
    # BoTorch's default constraint (noise >= 1e-4) would clamp the drawn noise.
    return GaussianLikelihood(noise_constraint=GreaterThan(1e-7))


def _set(model, case: Case):
    model.covar_module.lengthscale = case.lengthscale
    model.likelihood.noise = case.noise
    return model.eval()


def _nystrom(case: Case, inducing: Tensor | None = None, X=None, Y=None) -> NystromGP:
    # Outcome transform off: variances are then in the kernel's units (prior 1).
    X = case.X if X is None else X
    Y = case.Y if Y is None else Y
    model = NystromGP(
        X,
        Y,
        inducing=case.X if inducing is None else inducing,
        covar_module=RBFKernel(),
        likelihood=_likelihood(),
        outcome_transform=None,
    )
    return _set(model.to(X), case)


def _single_task(case: Case) -> SingleTaskGP:
    model = SingleTaskGP(
        case.X,
        case.Y,
        covar_module=RBFKernel(),
        likelihood=_likelihood(),
        outcome_transform=None,
    )
    return _set(model.to(case.X), case)


def _inducing_subset(case: Case, fraction: float) -> Tensor:
    m = max(1, int(fraction * case.X.shape[0]))
    return case.X[:m]


def _eps(dtype: torch.dtype) -> float:
    return torch.finfo(dtype).eps


@profile
@given(case=cases(), fraction=st.floats(0.05, 1.0))
def test_posterior_is_finite_and_covariance_psd(tkwargs, case: Case, fraction: float):
    case = case.on(tkwargs)
    model = _nystrom(case, _inducing_subset(case, fraction))
    post = model.posterior(case.Xt)
    mean, covar = post.mean, post.covariance_matrix
    assert torch.isfinite(mean).all() and torch.isfinite(covar).all()
    # PSD up to rounding relative to the scale (prior variance 1): eigenvalues of
    # a q x q matrix in float64 arithmetic.
    evals = torch.linalg.eigvalsh(covar.double())
    tol = 1e3 * _eps(case.dtype) * covar.shape[-1]
    assert evals.min() >= -tol, (evals.min().item(), tol)


@profile
@given(case=cases(), fraction=st.floats(0.05, 1.0))
def test_variance_between_zero_and_prior_plus_noise(
    tkwargs, case: Case, fraction: float
):
    case = case.on(tkwargs)
    model = _nystrom(case, _inducing_subset(case, fraction))
    var = model.posterior(case.Xt).variance
    noisy = model.posterior(case.Xt, observation_noise=True).variance
    assert (var >= 0).all()
    slack = 1e2 * _eps(case.dtype)
    assert (var <= 1 + slack).all()
    noise = model.likelihood.noise.item()  # the drawn value after the constraint
    assert (noisy <= 1 + noise + slack * (1 + noise)).all()
    assert (noisy >= var).all()


@profile
@given(case=cases(dtypes=(torch.float64,), clusters=False))
def test_every_input_inducing_equals_single_task_gp(tkwargs, case: Case):
    case = case.on(tkwargs)
    # Issue 15's target: 1e-6 relative for noise >= 1e-6. Inputs are spread
    # (lengthscales up to 1e3 still make K_SS numerically singular); tight
    # clusters are beyond the target (see test_nystrom_accuracy.py).
    model, ref = _nystrom(case), _single_task(case)
    post, ref_post = model.posterior(case.Xt), ref.posterior(case.Xt)
    # The data are O(1); means can be larger at tiny noise.
    scale = max(1.0, ref_post.mean.abs().max().item())
    mean_err = (post.mean - ref_post.mean).abs().max().item() / scale
    var_err = (post.variance - ref_post.variance).abs().max().item()
    assert mean_err <= 1e-6
    assert var_err <= 1e-6


@profile
@given(
    case=cases(dtypes=(torch.float64,), min_n=4),
    fraction=st.floats(0.1, 1.0),
    split=st.floats(0.3, 0.9),
)
def test_condition_on_observations_equals_a_rebuild(tkwargs, case, fraction, split):
    case = case.on(tkwargs)
    n = case.X.shape[0]
    k = min(n - 1, max(1, int(split * n)))
    inducing = _inducing_subset(case, fraction)
    first = _nystrom(case, inducing, X=case.X[:k], Y=case.Y[:k])
    first.posterior(case.Xt)  # build the cached state the update starts from
    conditioned = first.condition_on_observations(case.X[k:], case.Y[k:])
    rebuilt = _nystrom(case, inducing)
    post, ref = conditioned.posterior(case.Xt), rebuilt.posterior(case.Xt)
    scale = max(1.0, ref.mean.abs().max().item())
    # The Woodbury update and the refactorisation round differently: about
    # cond(B) * eps, cond(B) <= 1 + n / noise, times the amplification of an
    # ill-conditioned embedding on clustered inputs (up to 2.6e-7 seen in the
    # 1000-case profile); 1e-6 is the all-inducing identity's target.
    tol = 1e-6 + 1e2 * _eps(torch.float64) * (1 + n / case.noise)
    assert (post.mean - ref.mean).abs().max().item() / scale <= tol
    assert (post.covariance_matrix - ref.covariance_matrix).abs().max().item() <= tol
