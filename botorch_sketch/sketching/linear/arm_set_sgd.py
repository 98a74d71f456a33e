#!/usr/bin/env python3
r"""fLinUCB-GD's two SGD iterations on a fixed set of arms, in ``O(K^2)`` a step.

When every observed feature is one of ``K`` fixed arms ``V`` (``K x d``, ``K <
d``), fRLS-GD's ``theta`` and every tracked ``phi_k``
(:class:`~botorch_sketch.sketching.linear.SGDLeastSquares`,
:class:`~botorch_sketch.sketching.linear.WidthTracker`) stay in the arms' span: a
step only ever adds multiples of arms. :class:`ArmSetSGD` runs both on the
arms' coordinates ``V_c`` in an orthonormal basis ``Q`` of that span (``V^T = Q
V_c^T``), and keeps, besides ``theta`` and the tracker's ``R``, their products
with the arms: the means ``V_c theta`` and ``P = R V_c^T``. A step on arm ``k``
then reads ``theta^T x_k``, ``R x_k`` and the forms ``x_k^T R_k`` off those
(an element, a column, a diagonal) instead of computing them, and updates
``[theta, V_c theta]`` and ``[R, P]`` with one kernel each, against the
arm's row ``[x_k, V_c x_k]`` of a fixed ``K x 2K`` table: three small kernels
a step, where the general solver and tracker take seven. The iterates are the
same, sample for sample (the same generator draws the same indices);
:meth:`ArmSetSGD.in_full_space` hands the state back to a solver and a tracker
in ``R^d`` when a feature or candidate set from outside the arms arrives.

References

.. [Korda2015fast]
    N. Korda, Prashanth L.A., R. Munos. Fast gradient descent for drifting least
    squares regression, with application to bandits. AAAI 2015.
"""

from __future__ import annotations

import math

import torch
from botorch.exceptions.errors import UnsupportedError
from torch import Tensor

from botorch_sketch.sketching.linear.schedules import Schedule
from botorch_sketch.sketching.linear.sgd import (
    MAX_SCALE,
    MIN_SCALE,
    SGDLeastSquares,
    draw_uniforms,
)
from botorch_sketch.sketching.linear.width import REFRESH_PERIOD, WidthTracker


class ArmSetSGD:
    r"""fRLS-GD and the width tracker, run together on pulls of ``K < d`` fixed arms.

    The state, in the arms' coordinates ``V_c`` (``K x K``), is ``theta =
    theta_scale * u`` with ``s = [u, V_c u]``, and ``phi = a V_c + b R`` with
    ``M = [R, R V_c^T]``; the quadratic forms ``x_k^T R_k`` are the diagonal of
    ``M``'s right block. ``M`` is folded (``R <- b R + a V_c``) and its right
    block recomputed, and the means recomputed, every ``REFRESH_PERIOD`` steps,
    which bounds the rounding the kept products add.

    Example:
        >>> state = ArmSetSGD(arms, solver, width_step(d))  # solver: n = 0
        >>> state.pull(k, reward)
        >>> i = int(torch.argmax(state.scaled_scores(width)))
    """

    def __init__(
        self,
        arms: Tensor,
        solver: SGDLeastSquares,
        width_step: Schedule,
        steps_per_update: int = 1,
    ) -> None:
        r"""Take over an empty solver for pulls of ``arms``.

        Args:
            arms: A ``K x d`` tensor of the arms, ``K < d`` (not copied: the
                caller keeps it unchanged).
            solver: An ``SGDLeastSquares`` with no observations, without
                averaging; its schedules, generator and pending draws carry on
                here, and :meth:`in_full_space` hands the state back to it.
            width_step: The step schedule of the widths.
            steps_per_update: SGD steps of both iterations per pull.
        """
        if solver.n != 0 or solver.averaging:
            raise UnsupportedError(
                "ArmSetSGD takes over a solver with no observations and no averaging."
            )
        K = arms.shape[0]
        self.arms = arms
        self.solver = solver
        self.width_step = width_step
        self.steps_per_update = steps_per_update
        basis, triangle = torch.linalg.qr(arms.mT)
        #: ``d x K`` orthonormal basis of the arms' span.
        self.basis = basis
        coordinates = triangle.mT.contiguous()
        self._coordinates = coordinates
        gram = coordinates @ coordinates.mT
        #: ``[V_c, V_c V_c^T]`` (``K x 2K``): row ``k`` is what a step on arm ``k``
        #: adds to ``s`` and (times ``u``) to ``M``.
        self._table = torch.cat([coordinates, gram], dim=1)
        self._rows = self._table.unbind(0)
        self._gram_rows = gram.unbind(0)
        self.sq_norms = gram.diagonal().clone()
        self._sq_norm_list = self.sq_norms.tolist()
        self._state = solver.unscaled_theta.new_zeros(2 * K)
        self._state[:K] = basis.mT @ solver.unscaled_theta
        self._means = self._state[K:]
        self._means.copy_(coordinates @ self._state[:K])
        self._mean_entries = self._means.unbind(0)
        self._M = arms.new_zeros(K, 2 * K)
        self._products = self._M[:, K:]
        self._forms = self._products.diagonal()
        self._columns = self._products.unbind(1)
        self._u = arms.new_empty(K)
        self._w = arms.new_empty(K)
        self.theta_scale = solver.theta_scale
        # phi = a V_c + b R starts at the isotropic guess V_c / initial_scale.
        self._a = 1.0 / solver.isotropic_scale()
        self._b = 1.0
        self.step_scale = solver.step_scale
        self.sum_sq_norms = solver.sum_sq_norms
        self.n = 0
        #: Arm index and target of each observation, in order.
        self.pulls: list[int] = []
        self.targets: list[float] = []
        self._uniforms = solver._uniforms
        self._num_steps = 0
        self._steps_since_refresh = 0

    @property
    def theta(self) -> Tensor:
        r"""The current iterate in ``R^d`` (a new ``d`` tensor)."""
        K = self._coordinates.shape[0]
        return self.basis @ self._state[:K] * self.theta_scale

    def scaled_scores(self, width: float) -> Tensor:
        r"""The UCB scores over ``theta_scale`` (a new ``K`` tensor).

        ``(x_k^T theta + width sqrt(x_k^T phi_k)) / theta_scale``: their
        ranking, in four kernels.
        """
        b = self._b
        widths = torch.add(self._forms, self.sq_norms, alpha=self._a / b, out=self._w)
        alpha = width * math.sqrt(b) / self.theta_scale
        return torch.add(self._means, widths.clamp_min_(0).sqrt_(), alpha=alpha)

    def quadratic_forms(self) -> Tensor:
        r"""The ``K`` estimates of ``x_k^T (A_n + n lambda_n I)^{-1} x_k`` (>= 0)."""
        forms = torch.add(self._forms, self.sq_norms, alpha=self._a / self._b)
        return forms.mul_(self._b).clamp_min_(0)

    def pull(self, k: int, y: float) -> None:
        r"""Observe arm ``k`` with target ``y``, then take ``steps_per_update`` steps.

        Args:
            k: The arm's row, ``0 <= k < K``.
            y: The finite target.
        """
        self.pulls.append(k)
        self.targets.append(y)
        self.n += 1
        sq_norm = self._sq_norm_list[k]
        self.sum_sq_norms += sq_norm
        if sq_norm > 1.0:
            self.step_scale = min(self.step_scale, 1.0 / sq_norm)
        for _ in range(self.steps_per_update):
            self._step()

    def _step(self) -> None:
        # SGDLeastSquares._step and WidthTracker.step on the same draw, with
        # x_i = arm j: theta^T x_j is the mean j, R x_j is column j of P.
        n = self.n
        solver = self.solver
        if not self._uniforms:
            self._uniforms = draw_uniforms(solver.generator)
        i = min(int(self._uniforms.pop() * n), n - 1)
        j = self.pulls[i]
        row = self._rows[j]
        step_scale = self.step_scale
        ridge = solver.ridge(n) if solver.ridge is not None else 0.0
        # theta <- (1 - gamma lambda) theta + gamma (y_i - theta^T x_j) x_j.
        gamma = solver.step(n) * step_scale
        scale = self.theta_scale
        residual = self.targets[i] - scale * float(self._mean_entries[j])
        scale *= 1.0 - gamma * ridge
        if not MIN_SCALE < scale < MAX_SCALE:
            self._state.mul_(scale)
            scale = 1.0
        self._state.add_(row, alpha=gamma * residual / scale)
        self.theta_scale = scale
        # phi <- shrink phi - gamma (phi x_j) x_j^T + (gamma / n) V_c, as in
        # WidthTracker.step, with u = R x_j + (a / b) V_c x_j.
        gamma = self.width_step(n) * step_scale
        shrink = 1.0 - gamma * ridge
        a, b = self._a, self._b
        u = torch.add(self._columns[j], self._gram_rows[j], alpha=a / b, out=self._u)
        b_next = b * shrink
        if MIN_SCALE < b_next < MAX_SCALE:
            self._M.addr_(u, row, alpha=-gamma / shrink)
            self._b = b_next
        else:
            self._M.mul_(b_next).addr_(u, row, alpha=-gamma * b)
            self._b = 1.0
        self._a = shrink * a + gamma / n
        self._num_steps += 1
        self._steps_since_refresh += 1
        if self._steps_since_refresh == REFRESH_PERIOD:
            self._refresh()

    def _refresh(self) -> None:
        # phi into R, P = R V_c^T and the means recomputed from R and theta.
        K = self._coordinates.shape[0]
        R = self._M[:, :K]
        R.mul_(self._b).add_(self._coordinates, alpha=self._a)
        self._a, self._b = 0.0, 1.0
        torch.mm(R, self._coordinates.mT, out=self._products)
        torch.mv(self._coordinates, self._state[:K], out=self._means)
        self._steps_since_refresh = 0

    def in_full_space(
        self, rows: tuple[Tensor, ...]
    ) -> tuple[SGDLeastSquares, WidthTracker]:
        r"""The solver and tracker in ``R^d`` that this state stands for.

        The solver passed at construction, now holding the history (as the
        shared ``rows``), and a tracker of the arms, in ``O(n + K^2 d)``.

        Args:
            rows: The ``d`` rows of the arms, which the solver's history will
                share (the caller keeps them unchanged).

        Returns:
            ``(solver, tracker)``, which continue as this state would have.
        """
        solver = self.solver
        K = self._coordinates.shape[0]
        solver.unscaled_theta = self.basis @ self._state[:K]
        solver.theta_scale = self.theta_scale
        solver.step_scale = self.step_scale
        solver.sum_sq_norms = self.sum_sq_norms
        solver.num_steps += self._num_steps
        solver._uniforms = self._uniforms
        # The history as ``observe_shared`` would have left it, without steps.
        solver._rows = [rows[k] for k in self.pulls]
        solver._y = list(self.targets)
        solver.n = self.n
        tracker = WidthTracker(
            self._coordinates, self.width_step, solver.ridge, initial_scale=1.0
        )
        tracker._offsets.copy_(self._M[:, :K])
        tracker._a, tracker._b = self._a, self._b
        tracker.step_scale = self.step_scale
        return solver, tracker.transformed(self.basis, self.arms)
