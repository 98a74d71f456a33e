#!/usr/bin/env python3
r"""LinUCB and its SGD version fLinUCB-GD.

Both score a candidate ``x`` by ``theta^T x + kappa * sqrt(x^T W x)`` and play the
best, where ``W`` is the inverse of the (regularised) design matrix:

- :class:`LinUCB` [Li2010contextual]_ keeps ``theta = (A_n + lambda I)^{-1} b_n``
  and ``(A_n + lambda I)^{-1}`` exactly by Sherman-Morrison, ``O(d^2)`` per
  update and ``O(C d^2)`` to score ``C`` candidates.
- :class:`SGDLinUCB` (fLinUCB-GD, Alg. 2 of [Korda2015fast]_) stores no ``d x d``
  matrix: ``theta`` is tracked by fRLS-GD and each candidate slot ``k`` keeps a
  vector ``phi_k ~ (A_n + n lambda_n I)^{-1} x_k``
  (:class:`~botorch_sketch.sketching.linear.WidthTracker`), one ``O(d)`` step each
  per round: ``O(C d)`` per round in all.

Both are :class:`~botorch_sketch.bandits.policy.ContextualPolicy`: each round's
candidates are passed to ``select``. On a fixed finite arm set wrap them in
:class:`~botorch_sketch.bandits.fixed_arms.FixedArmSet`; fLinUCB-GD then keeps one
tracked width per arm, which is the paper's fixed-arm-set regime (cheaper than
LinUCB when ``C << d``). There, with fewer arms than dimensions, every iterate
stays in the arms' span, and fLinUCB-GD runs on the arms' coordinates in an
orthonormal basis of it (:mod:`~botorch_sketch.sketching.linear.arm_set_sgd`):
``O(C^2)`` per round, whatever ``d``, with the same iterates. When the
candidates change between rounds (contextual features), the slots are
warm-started from the previous round's ``phi`` and take ``tracking_steps``
extra steps, as the paper's Alg. 2 prescribes; a new number
of candidates restarts the slots from an isotropic guess.

References

.. [Li2010contextual]
    L. Li, W. Chu, J. Langford, R. E. Schapire. A contextual-bandit approach to
    personalized news article recommendation. WWW 2010.
.. [Korda2015fast]
    N. Korda, Prashanth L.A., R. Munos. Fast gradient descent for drifting least
    squares regression, with application to bandits. AAAI 2015.
"""

from __future__ import annotations

import math

import torch
from botorch.exceptions.errors import BotorchTensorDimensionError, InputDataError
from torch import Tensor

from botorch_sketch.bandits.policy import ContextualPolicy, argmax_first
from botorch_sketch.sketching.linear import (
    ArmSetSGD,
    HarmonicStep,
    InverseRidge,
    OnlineRidge,
    Schedule,
    SGDLeastSquares,
    WidthTracker,
)
from botorch_sketch.sketching.linear import width_step as width_step_for

# Steps between exact recomputations of SGDLinUCB's kept means.
_SYNC_PERIOD = 256
# The shapes of a single reward.
_ONE_REWARD = ((), (1,), (1, 1))


def _check_candidates(candidates: Tensor, dim: int) -> None:
    if candidates.ndim != 2 or candidates.shape[0] == 0:
        raise InputDataError(
            f"candidates must be a non-empty C x d tensor, got shape "
            f"{tuple(candidates.shape)}."
        )
    if candidates.shape[-1] != dim:
        raise BotorchTensorDimensionError(
            f"candidates have {candidates.shape[-1]} features, the policy {dim}."
        )
    if not bool(torch.isfinite(candidates).all()):
        raise InputDataError("candidates contain NaN or infinite values.")


class _RowLocator:
    r"""Which row of a ``C x d`` tensor a ``1 x d`` view ``candidates[k : k + 1]`` is.

    Read off memory addresses, with no kernel: the loops pass the chosen
    candidate as such a view.
    """

    def __init__(self, candidates: Tensor) -> None:
        self.shape = (1, candidates.shape[-1])
        self.dtype, self.device = candidates.dtype, candidates.device
        self.stride = candidates.stride(-1)
        self.origin = candidates.data_ptr()
        self.row_bytes = candidates.stride(0) * candidates.element_size()
        self.num_rows = candidates.shape[0]

    def index(self, features: Tensor) -> int:
        r"""``k`` if ``features`` is the view of row ``k``, else -1."""
        if (
            self.row_bytes <= 0
            or features.shape != self.shape
            or features.dtype != self.dtype
            or features.device != self.device
            or features.stride(-1) != self.stride
        ):
            return -1
        k, rest = divmod(features.data_ptr() - self.origin, self.row_bytes)
        return k if rest == 0 and 0 <= k < self.num_rows else -1


def _version(tensor: Tensor) -> int | None:
    r"""``tensor``'s version counter, or None for an inference tensor (none kept).

    The policies check an arm set once and skip the check while the same tensor
    comes back with the same version; a tensor made under
    ``torch.inference_mode()`` has no counter (reading it raises), so it is
    checked every time it is passed.
    """
    return None if tensor.is_inference() else tensor._version


def _unchanged(
    candidates: Tensor, last: Tensor | None, last_version: int | None
) -> bool:
    r"""Whether ``candidates`` is ``last``, not written since ``last_version``."""
    version = _version(candidates)
    return candidates is last and version is not None and version == last_version


def _check_width(width: float) -> None:
    # A NaN width made every score NaN (and arm 0 always played); a negative
    # one turns exploration into avoidance. KernelUCB rejects both too.
    if not (math.isfinite(width) and width >= 0):
        raise InputDataError(f"width must be finite and non-negative, got {width}.")


def _check_feedback(features: Tensor, rewards: Tensor, dim: int) -> Tensor:
    rewards = rewards.reshape(-1)
    if features.ndim != 2 or features.shape != (rewards.shape[0], dim):
        raise InputDataError(
            f"Expected q x {dim} features for q rewards, got {tuple(features.shape)} "
            f"and {rewards.shape[0]} rewards."
        )
    if not bool(torch.isfinite(features).all() and torch.isfinite(rewards).all()):
        raise InputDataError("Feedback contains NaN or infinite values.")
    return rewards


class LinUCB(ContextualPolicy):
    r"""LinUCB with Sherman-Morrison updates: exact ridge, ``O(d^2)`` per update.

    Example:
        >>> policy = LinUCB(dim=d, noise_var=1.0, width=0.5)
        >>> i = policy.select(candidates)
        >>> policy.update(candidates[i].unsqueeze(0), reward.reshape(1))
    """

    name = "LinUCB"

    def __init__(
        self,
        dim: int,
        noise_var: float = 1.0,
        width: float = 1.0,
        dtype: torch.dtype = torch.double,
        device: torch.device | str | None = None,
    ) -> None:
        r"""Start with no data.

        Args:
            dim: The feature dimension ``d``.
            noise_var: ``lambda`` of ``A_n + lambda I``: the ridge penalty, which
                is the noise variance of the Gaussian linear model with a
                standard normal prior (the GP view of the other policies).
            width: The width multiplier ``kappa``.
            dtype: The floating point type.
            device: The device.
        """
        super().__init__(generator=None)
        _check_width(width)
        self.dim = dim
        self.width = width
        self.solver = OnlineRidge(dim, noise_var=noise_var, dtype=dtype, device=device)
        # The candidates last checked, and their version counter: a fixed arm
        # set comes back unchanged every round and is checked once, as
        # SGDLinUCB does (the check cost a quarter of a round at d = 100).
        self._checked: Tensor | None = None
        self._checked_version: int | None = -1

    @property
    def theta(self) -> Tensor:
        r"""The ridge estimate ``(A_n + lambda I)^{-1} b_n`` (``d``)."""
        return self.solver.theta

    def scores(self, candidates: Tensor) -> Tensor:
        r"""The upper confidence bounds of ``C x d`` candidates (``C``)."""
        if not _unchanged(candidates, self._checked, self._checked_version):
            _check_candidates(candidates, self.dim)
            self._checked = candidates
            self._checked_version = _version(candidates)
        candidates = candidates.to(self.solver.theta)
        widths = self.solver.quadratic_forms(candidates).clamp_min(0).sqrt()
        return candidates @ self.solver.theta + self.width * widths

    def select(self, candidates: Tensor) -> Tensor:  # noqa: D102
        return argmax_first(self.scores(candidates))

    def update(self, features: Tensor, rewards: Tensor) -> None:  # noqa: D102
        # ``observe_batch`` checks the shapes and values, once for the batch.
        self.solver.observe_batch(features, rewards)


class SGDLinUCB(ContextualPolicy):
    r"""fLinUCB-GD: LinUCB with SGD-tracked ``theta`` and widths, ``O(C d)`` per round.

    Per round, the means ``x_k^T theta`` and the widths' quadratic forms are
    kept, updated in ``O(C)`` from the products the steps compute anyway, so
    that a round is seventeen small kernels. On a fixed arm set of ``C <
    d`` arms scored from the first round, both iterations run on the arms'
    coordinates in an orthonormal basis of their span (:attr:`arm_set`, an
    :class:`~botorch_sketch.sketching.linear.ArmSetSGD`; the steps only
    ever add multiples of arms, so nothing is lost): ``O(C^2)`` per round and
    eight small kernels. A candidate set or an observed feature outside the arms
    maps the state back to ``R^d`` once, ``O(n d)``, and the policy goes on
    there.
    Candidates are recognised as unchanged by identity and version counter,
    and a pulled arm by being the view ``candidates[k : k + 1]``, which the
    loops and :class:`~botorch_sketch.bandits.fixed_arms.FixedArmSet` pass.

    The width of slot ``k`` is ``sqrt(x_k^T phi_k)``, an estimate of
    ``sqrt(x_k^T (A_n + n lambda_n I)^{-1} x_k)``: LinUCB's width with the default
    ridge ``lambda_n = 1 / n``; with the paper's ``lambda_n = n^{-(1 - alpha)}``
    it is LinUCB's width for a ridge that grows like ``n^alpha``, not a fixed
    prior's.

    The schedules assume features of norm at most 1. Longer ones do not make
    the iterates diverge (the steps are divided by the largest squared norm
    seen, see :class:`~botorch_sketch.sketching.linear.SGDLeastSquares`), but on
    ``R x`` the policy is the policy on ``x`` with the ridge over ``R^2``: a
    weaker prior, whose widths SGD tracks more slowly. Rescale features to
    unit norm for the paper's behaviour.

    Example:
        >>> policy = FixedArmSet(SGDLinUCB(dim=d, generator=g), arms)
        >>> trace = run_finite(policy, env, num_steps=10_000)
    """

    name = "SGDLinUCB"

    def __init__(
        self,
        dim: int,
        width: float = 1.0,
        step: Schedule | None = None,
        ridge: Schedule | None = None,
        width_step: Schedule | None = None,
        tracking_steps: int = 1,
        steps_per_update: int = 1,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.double,
        device: torch.device | str | None = None,
    ) -> None:
        r"""Start with no data.

        Args:
            dim: The feature dimension ``d``.
            width: The width multiplier ``kappa``.
            step: The step schedule of ``theta``; defaults to
                ``HarmonicStep(3.5 d)`` (``gamma_n <= 1/4``; Theorem 1's choice for
                ``mu = 1/d``).
            ridge: The ridge schedule of ``theta`` and of the widths; defaults
                to LinUCB's ridge, ``InverseRidge(1.0)`` (``A_n + I``). The paper's
                ``PowerRidge(alpha=0.6)`` makes the widths shrink like
                ``n^{-alpha/2}`` even for arms never pulled, and under-explores.
            width_step: The step schedule of the widths; defaults to
                :func:`~botorch_sketch.sketching.linear.width_step`.
            tracking_steps: Extra width steps per slot when the candidates change
                (the paper's ``T``); none are taken for an unchanged arm set.
            steps_per_update: SGD steps (on resampled history samples) per
                observation; the paper takes one. More steps cost ``O(d)`` each and
                cut the tracking error when observations are few and the design
                ill-conditioned.
            generator: The generator of the resampled history indices.
            dtype: The floating point type.
            device: The device.
        """
        super().__init__(generator=generator)
        if dim < 1:
            raise InputDataError(f"dim must be at least 1, got {dim}.")
        if tracking_steps < 0 or steps_per_update < 1:
            raise InputDataError(
                "need tracking_steps >= 0 and steps_per_update >= 1, got "
                f"{tracking_steps} and {steps_per_update}."
            )
        _check_width(width)
        self.dim = dim
        self.width = width
        self.tracking_steps = tracking_steps
        self.steps_per_update = steps_per_update
        self.solver = SGDLeastSquares(
            dim,
            step=step or HarmonicStep(3.5 * dim),
            ridge=ridge or InverseRidge(1.0),
            generator=generator,
            dtype=dtype,
            device=device,
        )
        self.width_step = width_step or width_step_for(dim)
        self.tracker: WidthTracker | None = None
        #: While the arm set is fixed and smaller than ``d``: the state, in the
        #: arms' coordinates (``solver`` and ``tracker`` are then None); else
        #: None.
        self.arm_set: ArmSetSGD | None = None
        self._like = self.solver.unscaled_theta
        # The candidates last scored, as passed, and their version counter.
        self._candidates: Tensor | None = None
        self._candidates_version: int | None = -1
        self._arm_rows: tuple[Tensor, ...] | None = None
        self._updates_on_target = 0

    @property
    def theta(self) -> Tensor:
        r"""The SGD estimate of ``theta`` (``d``)."""
        if self.arm_set is not None:
            return self.arm_set.theta
        return self.solver.theta

    @property
    def basis(self) -> Tensor | None:
        r"""The ``d x C`` orthonormal basis of the arms' coordinates, else None."""
        return self.arm_set.basis if self.arm_set is not None else None

    @property
    def num_observations(self) -> int:
        r"""The number of observations so far."""
        return self.arm_set.n if self.arm_set is not None else self.solver.n

    def _retarget(self, candidates: Tensor) -> None:
        # ``candidates`` is checked and in the solver's dtype and device.
        if self.arm_set is not None:
            if torch.equal(candidates, self.arm_set.arms):
                return
            self._leave_coordinates()
        tracker = self.tracker
        solver = self.solver
        if tracker is None and solver.n == 0 and candidates.shape[0] < self.dim:
            self._enter_coordinates(candidates)
            return
        if tracker is None or tracker.vectors.shape != candidates.shape:
            tracker = self.tracker = WidthTracker(
                candidates,
                step=self.width_step,
                ridge=solver.ridge,
                initial_scale=solver.isotropic_scale(),
            )
        elif torch.equal(candidates, tracker.vectors):
            return
        else:
            tracker.retarget(candidates)
            if solver.n > 0:
                for _ in range(self.tracking_steps):
                    i = solver.draw_index()
                    tracker.step(solver.sample(i)[0], solver.n, solver.step_scale)
        self._arm_rows = None
        self._updates_on_target = 0
        self._sync_means()

    def _enter_coordinates(self, arms: Tensor) -> None:
        # Fewer arms than dimensions, and no data yet: while every observation
        # is one of the arms, theta and every phi_k stay in the arms' span, and
        # ArmSetSGD runs both iterations on the arms' coordinates: the same
        # iterates, sample for sample, at O(C^2) per round instead of O(C d).
        arms = arms.clone()
        self._arm_rows = arms.unbind(0)
        self.arm_set = ArmSetSGD(
            arms, self.solver, self.width_step, self.steps_per_update
        )
        self.solver = None

    def _leave_coordinates(self) -> None:
        # Candidates or features outside the fixed arm set: back to R^d, with
        # the state mapped through the basis (the same iterates again).
        self.solver, self.tracker = self.arm_set.in_full_space(self._arm_rows)
        self.arm_set = None
        self._arm_rows = None
        self._updates_on_target = 0
        self._sync_means()

    def _keep_arm_rows(self) -> None:
        # A private copy of the candidates, whose rows the solver's history may
        # hold for good (so that a pull of a fixed arm is stored and resampled
        # without a kernel), and their squared norms.
        vectors = self.tracker.vectors.clone()
        self._arm_rows = vectors.unbind(0)
        self._arm_sq_norms = self.tracker.sq_norms.tolist()

    def _sync_means(self) -> None:
        # ``V @ unscaled_theta`` for the tracked candidates ``V``, exactly; the
        # steps keep it up to date in O(C) from the tracker's ``V x_i``.
        self._means = torch.mv(self.tracker.vectors, self.solver.unscaled_theta)
        self._steps_since_sync = 0

    def _follow_step(self, fold: float, delta: float) -> None:
        # The solver moved ``unscaled <- fold * unscaled + delta * x_i`` and the
        # tracker has just stepped on the same ``x_i``.
        if fold != 1.0:
            self._means.mul_(fold)
        self._means.add_(self.tracker.vector_products, alpha=delta)
        self._steps_since_sync += 1
        if self._steps_since_sync == _SYNC_PERIOD:
            self._sync_means()

    def _scaled_scores(self, candidates: Tensor) -> Tensor:
        # The scores over ``theta_scale > 0``: the same ranking, one kernel fewer.
        # The arm set of a fixed-arm run comes back as the same tensor every
        # round, unmodified (its version counter says so), and was checked the
        # first time.
        if not _unchanged(candidates, self._candidates, self._candidates_version):
            _check_candidates(candidates, self.dim)
            # Detached: the tracked state is updated in place, with ``out=``.
            self._retarget(candidates.detach().to(self._like))
            self._candidates = candidates
            self._candidates_version = _version(candidates)
            self._locator = _RowLocator(candidates)
        if self.arm_set is not None:
            return self.arm_set.scaled_scores(self.width)
        forms, form_scale = self.tracker.scaled_quadratic_forms()
        alpha = self.width * math.sqrt(form_scale) / self.solver.theta_scale
        return torch.add(self._means, forms.clamp_min_(0).sqrt_(), alpha=alpha)

    def scores(self, candidates: Tensor) -> Tensor:
        r"""The upper confidence bounds of ``C x d`` candidates (``C``)."""
        scores = self._scaled_scores(candidates)
        state = self.arm_set if self.arm_set is not None else self.solver
        return scores.mul_(state.theta_scale)

    def select(self, candidates: Tensor) -> Tensor:  # noqa: D102
        return argmax_first(self._scaled_scores(candidates))

    def update(self, features: Tensor, rewards: Tensor) -> None:
        r"""fRLS-GD steps for ``theta`` and width steps per slot, per reward.

        ``steps_per_update`` of each (one by default, as in the paper), each pair
        on the same resampled history sample.
        """
        if (
            isinstance(features, Tensor)
            and isinstance(rewards, Tensor)
            and features.shape == (1, self.dim)
            and rewards.shape in _ONE_REWARD
        ):
            self._update_one(features, rewards)
            return
        rewards = _check_feedback(features, rewards, self.dim)
        if self.arm_set is not None:
            self._leave_coordinates()
        solver = self.solver
        features = features.to(solver.unscaled_theta)
        for x, r in zip(features, rewards.tolist(), strict=True):
            self._steps(solver._observe_checked(x, r, float(x @ x)))

    def _steps(self, step: tuple[int, Tensor, float, float]) -> None:
        # The tracker's step on the solver's sample, then the extra pairs.
        solver = self.solver
        for k in range(self.steps_per_update):
            if k:
                step = solver._step()
            if self.tracker is not None:
                self.tracker.step(step[1], solver.n, solver.step_scale)
                self._follow_step(step[2], step[3])

    def _update_one(self, features: Tensor, rewards: Tensor) -> None:
        # One observation, the loop's case: the checks folded into numbers it
        # needs anyway (a non-finite feature makes ``x^T x`` non-finite), and a
        # pull of a tracked candidate stored without a copy.
        reward = float(rewards)
        k = -1
        candidates = self._candidates
        # An inference tensor (no version counter) may have been written since
        # ``select``: its pulls take the general route, which reads the values.
        if (
            candidates is not None
            and math.isfinite(reward)
            and _unchanged(candidates, candidates, self._candidates_version)
        ):
            k = self._locator.index(features)
            if k >= 0 and self.arm_set is not None:
                self.arm_set.pull(k, reward)
                return
        solver = self.solver
        if k >= 0 and (self._arm_rows is not None or self._updates_on_target):
            # The fixed arm set's case (rows are kept only once the set has
            # outlived a round: contextual candidates change every round, and
            # one row is copied then).
            if self._arm_rows is None:
                self._keep_arm_rows()
            step = solver.observe_shared(
                self._arm_rows[k], reward, self._arm_sq_norms[k]
            )
        else:
            like = self._like
            x = features[0]
            if x.dtype != like.dtype or x.device != like.device:
                x = x.to(like)
            sq_norm = float(torch.dot(x, x))
            if not (math.isfinite(reward) and math.isfinite(sq_norm)) and not (
                math.isfinite(reward) and bool(torch.isfinite(x).all())
            ):
                raise InputDataError("Feedback contains NaN or infinite values.")
            if self.arm_set is not None:
                self._leave_coordinates()
                solver = self.solver
            step = solver._observe_checked(x, reward, sq_norm)
        if self.tracker is not None:
            self._updates_on_target += 1
        self._steps(step)
