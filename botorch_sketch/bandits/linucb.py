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
  (:class:`~botorch_sketch.sketching.sgd.WidthTracker`), one ``O(d)`` step each
  per round: ``O(C d)`` per round in all.

Both are :class:`~botorch_sketch.bandits.policy.ContextualPolicy`: each round's
candidates are passed to ``select``. On a fixed finite arm set wrap them in
:class:`~botorch_sketch.bandits.fixed_arms.FixedArmSet`; fLinUCB-GD then keeps one
tracked width per arm, which is the paper's fixed-arm-set regime (cheaper than
LinUCB when ``C << d``). When the candidates change between rounds (contextual
features), the slots are warm-started from the previous round's ``phi`` and
take ``tracking_steps`` extra steps, as the paper's Alg. 2 prescribes; a new
number of candidates restarts the slots from an isotropic guess.

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
from botorch_sketch.deprecation import renamed_keywords
from botorch_sketch.sketching.ridge import OnlineRidge
from botorch_sketch.sketching.sgd import (
    HarmonicStep,
    InverseRidge,
    Schedule,
    SGDLeastSquares,
    WidthTracker,
)
from botorch_sketch.sketching.sgd import width_step as width_step_for


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

    @renamed_keywords(ridge="noise_var")
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

    @property
    def theta(self) -> Tensor:
        r"""The ridge estimate ``(A_n + lambda I)^{-1} b_n`` (``d``)."""
        return self.solver.theta

    def scores(self, candidates: Tensor) -> Tensor:
        r"""The upper confidence bounds of ``C x d`` candidates (``C``)."""
        _check_candidates(candidates, self.dim)
        candidates = candidates.to(self.solver.theta)
        widths = self.solver.quadratic_forms(candidates).clamp_min(0).sqrt()
        return candidates @ self.solver.theta + self.width * widths

    def select(self, candidates: Tensor) -> Tensor:  # noqa: D102
        return argmax_first(self.scores(candidates))

    def update(self, features: Tensor, rewards: Tensor) -> None:  # noqa: D102
        rewards = _check_feedback(features, rewards, self.dim)
        self.solver.observe_batch(features.to(self.solver.theta), rewards)


class SGDLinUCB(ContextualPolicy):
    r"""fLinUCB-GD: LinUCB with SGD-tracked ``theta`` and widths, ``O(C d)`` per round.

    The width of slot ``k`` is ``sqrt(x_k^T phi_k)``, an estimate of
    ``sqrt(x_k^T (A_n + n lambda_n I)^{-1} x_k)``: LinUCB's width with the default
    ridge ``lambda_n = 1 / n``; with the paper's ``lambda_n = n^{-(1 - alpha)}``
    it is LinUCB's width for a ridge that grows like ``n^alpha``, not a fixed
    prior's.

    The schedules assume features of norm at most 1. Longer ones do not make
    the iterates diverge (the steps are divided by the largest squared norm
    seen, see :class:`~botorch_sketch.sketching.sgd.SGDLeastSquares`), but on
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
                :func:`~botorch_sketch.sketching.sgd.width_step`.
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

    @property
    def theta(self) -> Tensor:
        r"""The SGD estimate of ``theta`` (``d``)."""
        return self.solver.theta

    def _retarget(self, candidates: Tensor) -> None:
        tracker = self.tracker
        if tracker is not None and candidates is tracker.vectors:
            return
        if tracker is None or tracker.vectors.shape != candidates.shape:
            self.tracker = WidthTracker(
                candidates,
                step=self.width_step,
                ridge=self.solver.ridge,
                initial_scale=self.solver.isotropic_scale(),
            )
            return
        if torch.equal(candidates, tracker.vectors):
            tracker.vectors = candidates
            return
        tracker.retarget(candidates)
        if self.solver.n > 0:
            for _ in range(self.tracking_steps):
                i = self.solver.draw_index()
                tracker.step(
                    self.solver.sample(i)[0], self.solver.n, self.solver.step_scale
                )

    def scores(self, candidates: Tensor) -> Tensor:
        r"""The upper confidence bounds of ``C x d`` candidates (``C``)."""
        # The arm set of a fixed-arm run comes back as the same tensor every
        # round, and was checked the first time.
        if self.tracker is None or candidates is not self.tracker.vectors:
            _check_candidates(candidates, self.dim)
            candidates = candidates.to(self.solver.theta)
            self._retarget(candidates)
        widths = self.tracker.quadratic_forms().sqrt_()
        return torch.add(candidates @ self.solver.theta, widths, alpha=self.width)

    def select(self, candidates: Tensor) -> Tensor:  # noqa: D102
        return argmax_first(self.scores(candidates))

    def update(self, features: Tensor, rewards: Tensor) -> None:
        r"""fRLS-GD steps for ``theta`` and width steps per slot, per reward.

        ``steps_per_update`` of each (one by default, as in the paper), each pair
        on the same resampled history sample.
        """
        if (
            self.steps_per_update == 1
            and isinstance(features, Tensor)
            and isinstance(rewards, Tensor)
            and features.shape == (1, self.dim)
            and rewards.numel() == 1
        ):
            self._update_one(features, rewards)
            return
        rewards = _check_feedback(features, rewards, self.dim)
        features = features.to(self.solver.theta)
        for x, r in zip(features, rewards, strict=True):
            i = self.solver.observe(x, r, validate=False)
            for step in range(self.steps_per_update):
                if step:
                    i = self.solver.sgd_step()
                if self.tracker is not None:
                    self.tracker.step(
                        self.solver.sample(i)[0], self.solver.n, self.solver.step_scale
                    )

    def _update_one(self, features: Tensor, rewards: Tensor) -> None:
        # One observation, the loop's case: the same steps as ``update`` with
        # the checks folded into numbers it needs anyway (a non-finite feature
        # makes ``x^T x`` non-finite) and the sample read once for both steps.
        solver = self.solver
        x = features[0]
        if x.dtype != solver.theta.dtype or x.device != solver.theta.device:
            x = x.to(solver.theta)
        reward = float(rewards)
        sq_norm = float(torch.dot(x, x))
        if not (math.isfinite(reward) and math.isfinite(sq_norm)) and not (
            math.isfinite(reward) and bool(torch.isfinite(x).all())
        ):
            raise InputDataError("Feedback contains NaN or infinite values.")
        i, x_i = solver._observe_checked(x, reward, sq_norm)
        if self.tracker is not None:
            self.tracker.step(x_i, solver.n, solver.step_scale)
