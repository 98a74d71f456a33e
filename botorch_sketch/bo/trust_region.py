#!/usr/bin/env python3
r"""A TuRBO-1 trust region around the incumbent, for any model of this package.

TuRBO [Eriksson2019scalable]_ keeps BO local: candidates are drawn from a box
centred at the best observation, with side lengths proportional to the model's
ARD lengthscales (normalised to geometric mean 1, so the box has volume
``length^d``). The length doubles after ``success_tolerance`` consecutive
improving batches, halves after ``failure_tolerance`` consecutive failing ones,
and a length below ``length_min`` asks the caller to restart. The state follows
BoTorch's TuRBO tutorial; everything else (acquisition functions, their
optimiser, pathwise Thompson sampling) is BoTorch's. Inputs live in the unit
cube, as in that tutorial.

The helpers read the model only through its public ``covar_module`` (a
``ScaleKernel`` is looked through; an approximate GP's ``model.covar_module``
is used) and ``input_transform``; a model without ARD lengthscales gets a cube.
So ``SingleTaskGP``, ``NystromGP``, ``GradientSubsetGP`` and
``SingleTaskVariationalGP`` all work, and any other single-output model does
with a cubic region.

Example:
    >>> state = TurboState(dim=6, batch_size=10, best_value=train_Y.max().item())
    >>> X_next = generate_batch(state, model, train_X, train_Y, batch_size=10)
    >>> state = update_state(state, problem(X_next).unsqueeze(-1))
    >>> if state.restart_triggered:
    ...     state = restart_state(state)

References:

.. [Eriksson2019scalable]
    D. Eriksson, M. Pearce, J. Gardner, R. D. Turner, M. Poloczek. Scalable
    global optimization via local Bayesian optimization. NeurIPS 2019.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Literal

import torch
from botorch.acquisition import (
    AcquisitionFunction,
    qLogExpectedImprovement,
    qLogNoisyExpectedImprovement,
)
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.generation.sampling import MaxPosteriorSampling
from botorch.models.approximate_gp import ApproximateGPyTorchModel
from botorch.models.model import Model
from botorch.models.transforms.input import AffineInputTransform
from botorch.optim import optimize_acqf
from botorch.sampling.pathwise import draw_matheron_paths
from botorch.utils.sampling import draw_sobol_samples
from gpytorch.kernels import Kernel
from torch import Tensor
from torch.quasirandom import SobolEngine

from botorch_sketch.checks import checked_count, checked_optional_count

TrustRegionAcquisition = Literal["qlognei", "qlogei", "ts"]


@dataclass
class TurboState:
    r"""The state of one TuRBO-1 trust region.

    Attributes:
        dim: The input dimension ``d``.
        batch_size: Points evaluated per iteration ``q``; sets the default
            failure tolerance.
        length: The current (pre-lengthscale-weighting) side length of the
            region, in units of the unit cube.
        length_min: A length below this triggers a restart.
        length_max: The length never grows beyond this.
        failure_counter: Consecutive batches without improvement.
        failure_tolerance: Consecutive failures that halve the length;
            defaults to ``ceil(max(4 / batch_size, dim / batch_size))``.
        success_counter: Consecutive improving batches.
        success_tolerance: Consecutive successes that double the length.
        best_value: The best observation so far (BoTorch maximises). Start it
            at the initial design's best observation; ``-inf`` counts the
            first finite batch as an improvement. NaN and ``+inf`` are refused.
        restart_triggered: Whether the length fell below ``length_min``.
    """

    dim: int
    batch_size: int
    length: float = 0.8
    length_min: float = 0.5**7
    length_max: float = 1.6
    failure_counter: int = 0
    failure_tolerance: int | None = None
    success_counter: int = 0
    success_tolerance: int = 3
    best_value: float = -math.inf
    restart_triggered: bool = False

    def __post_init__(self) -> None:
        # Counts are compared with ``==``: a tolerance of 1.5 was never reached
        # and the region stopped growing, silently.
        self.dim = checked_count(self.dim, "dim")
        self.batch_size = checked_count(self.batch_size, "batch_size")
        self.success_tolerance = checked_count(
            self.success_tolerance, "success_tolerance"
        )
        self.failure_tolerance = checked_optional_count(
            self.failure_tolerance, "failure_tolerance"
        )
        self.failure_counter = checked_count(
            self.failure_counter, "failure_counter", minimum=0
        )
        self.success_counter = checked_count(
            self.success_counter, "success_counter", minimum=0
        )
        if self.failure_tolerance is None:
            self.failure_tolerance = math.ceil(
                max(4.0 / self.batch_size, self.dim / self.batch_size)
            )
        if not 0 < self.length_min <= self.length_max:
            raise InputDataError(
                "Trust-region lengths must satisfy 0 < length_min <= length_max; got "
                f"length_min={self.length_min}, length_max={self.length_max}."
            )
        if not 0 < self.length <= self.length_max:
            raise InputDataError(
                f"length must lie in (0, length_max={self.length_max}]; got "
                f"{self.length}."
            )
        if math.isnan(self.best_value):
            raise InputDataError("best_value is NaN.")
        # Nothing beats +inf: every batch would fail and the region only shrink
        # to a restart. -inf is the documented "no value yet".
        if self.best_value == math.inf:
            raise InputDataError(
                "best_value is +inf, which no observation can improve on; start "
                "it at the initial design's best observation, or -inf for none."
            )


def update_state(state: TurboState, Y_next: Tensor) -> TurboState:
    r"""The state after observing a batch (the given state is not changed).

    A batch succeeds when its best observation beats ``best_value`` by more than
    ``1e-3 |best_value|``. ``success_tolerance`` successes in a row double the
    length (up to ``length_max``), ``failure_tolerance`` failures in a row halve
    it; either resets both counters. A length below ``length_min`` sets
    ``restart_triggered``.

    Args:
        state: The current state.
        Y_next: A ``q x 1`` (or ``q``) tensor of the batch's observations.

    Returns:
        The new state.
    """
    if Y_next.numel() == 0 or (Y_next.dim() > 1 and Y_next.shape[-1] != 1):
        raise InputDataError(
            f"Y_next must be a non-empty q x 1 tensor; got shape {tuple(Y_next.shape)}."
        )
    if not bool(torch.isfinite(Y_next).all()):
        raise InputDataError("Y_next contains NaN or infinite values.")
    best_next = float(Y_next.max())
    best = state.best_value
    # -inf + 1e-3 * inf is NaN, which would make a first batch a failure.
    improved = best == -math.inf or best_next > best + 1e-3 * abs(best)
    success = state.success_counter + 1 if improved else 0
    failure = 0 if improved else state.failure_counter + 1
    length = state.length
    if success == state.success_tolerance:
        length, success = min(2.0 * length, state.length_max), 0
    elif failure == state.failure_tolerance:
        length, failure = length / 2.0, 0
    return dataclasses.replace(
        state,
        length=length,
        success_counter=success,
        failure_counter=failure,
        best_value=max(best, best_next),
        restart_triggered=state.restart_triggered or length < state.length_min,
    )


def restart_state(
    state: TurboState, length: float | None = None, best_value: float = -math.inf
) -> TurboState:
    r"""A fresh state with the same dimension, batch size, limits and tolerances.

    TuRBO restarts from a new initial design and discards the old region's data;
    both are the caller's business.

    Args:
        state: The state to restart.
        length: The new initial length; defaults to TuRBO's 0.8 (or
            ``length_max`` if smaller).
        best_value: The best observation of the new region's design.

    Returns:
        The new state.
    """
    return TurboState(
        dim=state.dim,
        batch_size=state.batch_size,
        length=min(0.8, state.length_max) if length is None else length,
        length_min=state.length_min,
        length_max=state.length_max,
        failure_tolerance=state.failure_tolerance,
        success_tolerance=state.success_tolerance,
        best_value=best_value,
    )


def _lengthscale_kernel(kernel: Kernel | None) -> Kernel | None:
    # The first kernel with a lengthscale, looking through wrappers such as
    # ScaleKernel; None for sums, products and kernels without one.
    while kernel is not None:
        if getattr(kernel, "has_lengthscale", False):
            return kernel
        kernel = getattr(kernel, "base_kernel", None)
    return None


def lengthscale_weights(model: Model, dim: int) -> Tensor:
    r"""TuRBO's side-length weights: the ARD lengthscales over their geometric mean.

    Lengthscales are read from ``model.covar_module`` (or an approximate GP's
    ``model.model.covar_module``), through a ``ScaleKernel``, and mapped back to
    the model's raw input space through an affine input transform (``Normalize``,
    ``InputStandardize``). Batched lengthscales are averaged geometrically.
    Anything else (no ARD, no kernel, a sum of kernels) gives uniform weights.

    Args:
        model: A fitted model.
        dim: The input dimension ``d``.

    Returns:
        A ``d`` tensor of positive weights with product 1.
    """
    covar = getattr(model, "covar_module", None)
    if covar is None:
        covar = getattr(getattr(model, "model", None), "covar_module", None)
    kernel = _lengthscale_kernel(covar if isinstance(covar, Kernel) else None)
    lengthscale = None if kernel is None else kernel.lengthscale
    if lengthscale is None or lengthscale.shape[-1] != dim or dim == 1:
        return torch.ones(dim, dtype=torch.double)
    log_ls = lengthscale.detach().reshape(-1, dim).log().mean(0)
    transform = getattr(model, "input_transform", None)
    if isinstance(transform, AffineInputTransform):
        # A lengthscale l on (x - offset) / coefficient is l * coefficient on x.
        coefficient = transform.coefficient.detach()
        if coefficient.shape[-1] == dim:
            log_ls = log_ls + coefficient.reshape(-1, dim).log().mean(0)
    if not bool(torch.isfinite(log_ls).all()):
        return torch.ones(dim, dtype=torch.double)
    return (log_ls - log_ls.mean()).exp()


def _check_center(state: TurboState, X_center: Tensor) -> Tensor:
    if X_center.dim() == 2 and X_center.shape[0] == 1:
        X_center = X_center.squeeze(0)
    if X_center.dim() != 1 or X_center.shape[-1] != state.dim:
        raise InputDataError(
            f"X_center must be a {state.dim} or 1 x {state.dim} tensor (the state's "
            f"dim); got shape {tuple(X_center.shape)}."
        )
    if not bool(((X_center >= 0) & (X_center <= 1)).all()):
        raise InputDataError("X_center must lie in the unit cube [0, 1]^d.")
    return X_center


def trust_region_bounds(state: TurboState, model: Model, X_center: Tensor) -> Tensor:
    r"""The trust region: a box centred at ``X_center``, clipped to the unit cube.

    Side ``j`` is ``length * w_j`` with ``w`` from :func:`lengthscale_weights`, so
    before clipping the box has volume ``length^d``.

    Args:
        state: The trust-region state.
        model: The fitted model whose lengthscales shape the box.
        X_center: A ``d`` (or ``1 x d``) tensor, the incumbent, in ``[0, 1]^d``.

    Returns:
        A ``2 x d`` tensor of lower and upper bounds.
    """
    center = _check_center(state, X_center)
    weights = lengthscale_weights(model, state.dim).to(center)
    half = 0.5 * state.length * weights
    return torch.stack([center - half, center + half]).clamp(0.0, 1.0)


def _check_data(state: TurboState, X: Tensor, Y: Tensor) -> None:
    if X.dim() != 2 or X.shape[-1] != state.dim:
        raise InputDataError(
            f"X must be a n x {state.dim} tensor (the state's dim); got shape "
            f"{tuple(X.shape)}."
        )
    if Y.dim() != 2 or Y.shape != (X.shape[0], 1) or X.shape[0] == 0:
        raise InputDataError(
            f"Y must be a n x 1 tensor with n = {X.shape[0]} > 0; got shape "
            f"{tuple(Y.shape)}."
        )
    if not bool(torch.isfinite(Y).all()):
        raise InputDataError("Y contains NaN or infinite values.")


def perturbed_candidates(
    X_center: Tensor,
    bounds: Tensor,
    num_candidates: int,
    seed: int | None = None,
    engine: SobolEngine | None = None,
) -> Tensor:
    r"""TuRBO's candidate set: the centre with a random subset of coordinates moved.

    A scrambled Sobol sample of the box; in each candidate every coordinate is
    replaced with probability ``min(1, 20 / d)`` (at least one per candidate) and
    the rest keep the centre's value, which keeps candidates near the incumbent
    in high dimension [Eriksson2019scalable]_.

    Args:
        X_center: A ``d`` tensor, the centre.
        bounds: A ``2 x d`` tensor, the box.
        num_candidates: The number ``N`` of candidates.
        seed: Seeds the Sobol sample and the mask (None: from torch's global
            random state).
        engine: A scrambled ``SobolEngine`` of dimension ``d`` to draw the
            sample from (its sequence continues from call to call), instead of
            scrambling a new one (which costs more than drawing thousands of
            points) each call; ``seed`` then seeds the mask only.

    Returns:
        A ``N x d`` tensor.
    """
    d = X_center.shape[-1]
    if engine is None:
        sobol = draw_sobol_samples(bounds, n=num_candidates, q=1, seed=seed)
        sobol = sobol.squeeze(1)
    else:
        unit = engine.draw(num_candidates, dtype=bounds.dtype).to(bounds)
        sobol = bounds[0] + (bounds[1] - bounds[0]) * unit
    g = None if seed is None else torch.Generator().manual_seed(seed)
    mask = torch.rand(num_candidates, d, generator=g) <= min(1.0, 20.0 / d)
    empty = ~mask.any(-1)
    columns = torch.randint(d, (int(empty.sum()),), generator=g)
    mask[empty.nonzero().squeeze(-1), columns] = True
    mask = mask.to(X_center.device)
    return torch.where(mask, sobol, X_center.expand_as(sobol))


def _thompson_batch(model: Model, candidates: Tensor, batch_size: int) -> Tensor:
    # One posterior draw per point, maximised over the candidate set without
    # replacement. Pathwise draws cost O(N) per path; the joint posterior over
    # N candidates (the fallback) is N x N.
    sampler = MaxPosteriorSampling(model, replacement=False)
    if isinstance(model, ApproximateGPyTorchModel):
        # GPyTorch's variational strategy memoises the inducing Cholesky factor
        # with the batch shape of the last posterior call, and the Matheron
        # update then fails on it (gpytorch issue #2642); leaving eval mode
        # clears that cache.
        model.train()
        model.eval()
    try:
        paths = draw_matheron_paths(model, sample_shape=torch.Size([batch_size]))
    except (NotImplementedError, UnsupportedError):
        with torch.no_grad():
            return sampler(candidates, num_samples=batch_size)
    with torch.no_grad():
        samples = paths(candidates).unsqueeze(-1)  # batch_size x N x 1
    return sampler.maximize_samples(candidates, samples, batch_size)


def generate_batch(
    state: TurboState,
    model: Model,
    X: Tensor,
    Y: Tensor,
    batch_size: int | None = None,
    acquisition: TrustRegionAcquisition | AcquisitionFunction = "qlognei",
    num_restarts: int = 10,
    raw_samples: int = 512,
    num_candidates: int | None = None,
    seed: int | None = None,
) -> Tensor:
    r"""The next batch: the acquisition maximised inside the trust region.

    The region is centred at the best observation. ``"qlognei"`` and
    ``"qlogei"`` build BoTorch's ``qLogNoisyExpectedImprovement`` (baseline ``X``)
    or ``qLogExpectedImprovement`` (incumbent ``Y.max()``), and an acquisition
    function instance is used as given; all three are maximised with
    ``optimize_acqf`` over the region. ``"ts"`` is TuRBO's Thompson sampling: one
    posterior draw per point, maximised over :func:`perturbed_candidates`; draws
    are BoTorch's pathwise (Matheron) paths when the model supports
    ``draw_matheron_paths``, else joint samples (``MaxPosteriorSampling``).

    Args:
        state: The trust-region state.
        model: A fitted single-output model on ``X`` (or on part of it).
        X: A ``n x d`` tensor of the region's observed inputs, in ``[0, 1]^d``.
        Y: A ``n x 1`` tensor of their observations (maximised).
        batch_size: Points to return; defaults to ``state.batch_size``.
        acquisition: ``"qlognei"``, ``"qlogei"``, ``"ts"`` or an
            ``AcquisitionFunction``.
        num_restarts: ``optimize_acqf``'s restarts.
        raw_samples: ``optimize_acqf``'s raw samples.
        num_candidates: Thompson sampling's candidate-set size, at least
            ``batch_size``; defaults to ``min(5000, max(2000, 200 d))`` (or
            ``batch_size`` if larger).
        seed: Seeds Thompson sampling's candidate set (None: torch's global
            random state, which also drives the posterior draws).

    Returns:
        A ``batch_size x d`` tensor of points in the trust region.
    """
    _check_data(state, X, Y)
    q = checked_count(
        state.batch_size if batch_size is None else batch_size, "batch_size"
    )
    num_restarts = checked_count(num_restarts, "num_restarts")
    raw_samples = checked_count(raw_samples, "raw_samples")
    num_candidates = checked_optional_count(num_candidates, "num_candidates")
    if not isinstance(acquisition, AcquisitionFunction) and model.num_outputs != 1:
        raise UnsupportedError(
            "generate_batch builds its acquisition for single-output models; pass "
            "an AcquisitionFunction with an objective for a multi-output model."
        )
    center = X[Y.squeeze(-1).argmax()]
    bounds = trust_region_bounds(state, model, center)
    if isinstance(acquisition, AcquisitionFunction):
        acqf = acquisition
    elif acquisition == "ts":
        # Sampling without replacement picks q distinct candidates: fewer than
        # q failed inside BoTorch ("selected index k out of range"). A given
        # size is the caller's and is refused; the default grows to q.
        if num_candidates is not None and num_candidates < q:
            raise InputDataError(
                f"Thompson sampling picks batch_size = {q} distinct candidates; "
                f"num_candidates = {num_candidates} is fewer. Pass num_candidates "
                f">= {q} (or None)."
            )
        default = min(5000, max(2000, 200 * state.dim))
        size = num_candidates or max(default, q)
        candidates = perturbed_candidates(center, bounds, size, seed=seed)
        return _thompson_batch(model, candidates, q).detach()
    elif acquisition == "qlognei":
        acqf = qLogNoisyExpectedImprovement(model, X_baseline=X)
    elif acquisition == "qlogei":
        acqf = qLogExpectedImprovement(model, best_f=Y.max())
    else:
        raise InputDataError(
            f"Unknown acquisition {acquisition!r}; expected 'qlognei', 'qlogei', "
            "'ts' or an AcquisitionFunction."
        )
    batch, _ = optimize_acqf(
        acqf, bounds=bounds, q=q, num_restarts=num_restarts, raw_samples=raw_samples
    )
    return batch.detach()
