#!/usr/bin/env python3
r"""SGD tracking of a drifting least-squares solution: fOLS-GD and fRLS-GD.

After the ``n``-th observation, one stochastic gradient step is taken on a
sample ``i_n`` drawn uniformly from the *whole* history [Korda2015fast]_:

``theta <- theta + gamma_n ((y_i - theta^T x_i) x_i - lambda_n theta)``

With ``lambda_n = 0`` (fOLS-GD) the iterate tracks the least-squares solution
``A_n^{-1} b_n``; with a ridge schedule (fRLS-GD) the fixed point of the mean
update is ``(A_n + n lambda_n I)^{-1} b_n``. Each step costs ``O(d)``; the
history is kept (``O(n d)`` memory) because samples are redrawn from it.

Step sizes and ridge schedules are small callables of ``n``
(:mod:`~botorch_sketch.sketching.linear.schedules`), so a policy can swap
them; the random generator is explicit. Schedules are written for
features of norm at most 1, the setting of the paper's theorems; the solvers
divide every step by the largest squared feature norm seen so far when it
exceeds 1 (:attr:`SGDLeastSquares.step_scale`), so features on any scale give
the same iterates as features rescaled to unit norm, instead of diverging.

The second half of fLinUCB-GD, its widths tracked by the same kind of step,
is :class:`~botorch_sketch.sketching.linear.WidthTracker`
(:mod:`~botorch_sketch.sketching.linear.width`).

References

.. [Korda2015fast]
    N. Korda, Prashanth L.A., R. Munos. Fast gradient descent for drifting least
    squares regression, with application to bandits. AAAI 2015.
"""

from __future__ import annotations

import copy
import math

import torch
from botorch.exceptions.errors import BotorchTensorDimensionError, InputDataError
from torch import Tensor

from botorch_sketch.sketching.linear.schedules import Schedule

# The range a float scale factor is kept in before it is folded into its tensor:
# far from underflow and overflow, and rare to leave (a shrink of 1 - 1/(4n) per
# step takes it below 1e-100 only after astronomically many steps).
MIN_SCALE = 1e-100
MAX_SCALE = 1e100
# Uniforms drawn per call for the resampled indices.
_UNIFORM_BLOCK = 1024


def draw_uniforms(generator: torch.Generator | None) -> list[float]:
    r"""A block of uniforms from ``generator``, to be used by ``list.pop()``.

    The solvers draw their resampled indices from these: one generator call
    per step would cost more than an ``O(d)`` step for ``d`` in the thousands.
    """
    device = generator.device if generator is not None else "cpu"
    block = torch.rand(
        _UNIFORM_BLOCK, generator=generator, dtype=torch.double, device=device
    )
    return block.tolist()[::-1]


class SGDLeastSquares:
    r"""fOLS-GD / fRLS-GD: one SGD step per observation on a resampled past sample.

    The step is ``gamma_n * step_scale`` with ``step_scale = 1 / max(1,
    max_i ||x_i||^2)`` over the observations so far: the schedules assume
    ``||x|| <= 1``, and a step ``gamma ||x||^2`` above 2 makes the iterates
    diverge (features ten times too large gave weights near 1e32). With the
    scale, SGD on ``x`` takes the same steps as SGD on ``x / R`` (``R`` the
    largest norm), whose ridge is ``lambda_n / R^2``: the fixed point is
    unchanged and the tracking rate is that of unit-norm features.

    The iterate is kept as ``theta = theta_scale * unscaled_theta``: the ridge's
    shrink ``1 - gamma_n lambda_n`` multiplies the float ``theta_scale``, so a
    step is one ``O(d)`` kernel on the tensor instead of two. The targets are
    kept as Python floats, so that a step reads its sample's target without a
    device transfer.

    Example:
        >>> solver = SGDLeastSquares(dim=10, step=HarmonicStep(35.0))
        >>> for x, y in stream:
        ...     solver.observe(x, y)
        >>> solver.theta  # tracks the least-squares solution
    """

    def __init__(
        self,
        dim: int,
        step: Schedule,
        ridge: Schedule | None = None,
        averaging: bool = False,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.double,
        device: torch.device | str | None = None,
    ) -> None:
        r"""Set up an empty solver at ``theta = 0``.

        Args:
            dim: The feature dimension ``d``.
            step: The step-size schedule ``gamma_n``.
            ridge: The ridge schedule ``lambda_n``; None for fOLS-GD (no ridge).
            averaging: Keep a Polyak (uniform) average of the iterates and report it
                as :attr:`estimate`.
            generator: The generator for the resampled indices.
            dtype: The floating point type.
            device: The device.
        """
        if dim < 1:
            raise InputDataError(f"dim must be at least 1, got {dim}.")
        self.dim = dim
        self.step = step
        self.ridge = ridge
        self.averaging = averaging
        self.generator = generator
        #: ``theta / theta_scale`` (``d``), updated in place.
        self.unscaled_theta = torch.zeros(dim, dtype=dtype, device=device)
        #: A positive float; the ridge's shrinks accumulate here.
        self.theta_scale = 1.0
        self.average = torch.zeros_like(self.unscaled_theta)
        #: ``1 / max(1, largest squared feature norm so far)``, multiplying every
        #: step (a float: tensor arithmetic on the step doubled its cost).
        self.step_scale = 1.0
        #: The number of SGD steps taken (the Polyak average is over these).
        self.num_steps = 0
        # The history: the first ``_n_parent`` observations are the parent's
        # (the solver this one was forked from, see :meth:`fork`), then the own
        # ones. An own feature row is a ``d`` tensor the caller promised never to
        # write (``observe_shared``, e.g. a row of a fixed arm set: sampling it
        # costs no kernel) or an index into ``_X``, where the others are copied.
        self._parent: SGDLeastSquares | None = None
        self._n_parent = 0
        self._rows: list[Tensor | int] = []
        self._y: list[float] = []
        self._X = torch.empty(64, dim, dtype=dtype, device=device)
        self._num_copied = 0
        #: ``trace(A_n)``, the sum of the squared feature norms so far.
        self.sum_sq_norms = 0.0
        self.n = 0
        # Uniforms are drawn from the generator in blocks: one draw per step
        # would cost more than the O(d) step itself for d in the thousands.
        self._uniforms: list[float] = []

    @property
    def theta(self) -> Tensor:
        r"""The current iterate (``d``), a new tensor that later steps leave alone."""
        return self.unscaled_theta * self.theta_scale

    @property
    def X(self) -> Tensor:
        r"""The ``n x d`` history of features (a new tensor, ``O(n d)``)."""
        if self.n == 0:
            return self._X[:0]
        return torch.stack([self.sample(i)[0] for i in range(self.n)])

    @property
    def y(self) -> Tensor:
        r"""The ``n`` history of targets (a new tensor)."""
        return torch.tensor(
            [self.sample(i)[1] for i in range(self.n)],
            dtype=self.unscaled_theta.dtype,
            device=self.unscaled_theta.device,
        )

    def sample(self, i: int) -> tuple[Tensor, float]:
        r"""The ``i``-th observation ``(x_i, y_i)`` of the history, ``0 <= i < n``."""
        j = i - self._n_parent
        if j < 0:
            return self._parent.sample(i)
        row = self._rows[j]
        if row.__class__ is int:
            row = self._X[row]
        return row, self._y[j]

    def draw_index(self) -> int:
        r"""An index drawn uniformly from the history (``n >= 1``)."""
        if not self._uniforms:
            self._uniforms = draw_uniforms(self.generator)
        return min(int(self._uniforms.pop() * self.n), self.n - 1)

    def fork(self) -> SGDLeastSquares:
        r"""A copy that shares the history so far, in ``O(d)`` time and memory.

        The copy reads the first ``n`` observations from this solver (which
        only ever appends past them, so neither solver disturbs the other) and
        appends its own. This is what makes ``condition_on_observations`` of a
        model an ``O(d)`` update rather than an ``O(n d)`` copy. The generator
        is shared.
        """
        other = copy.copy(self)
        other._parent, other._n_parent = self, self.n
        other._rows, other._y = [], []
        other._X = self._X.new_empty(16, self.dim)
        other._num_copied = 0
        other.unscaled_theta = self.unscaled_theta.clone()
        other.average = self.average.clone()
        other._uniforms = list(self._uniforms)
        return other

    def _entries(self) -> list[tuple[Tensor, bool, float]]:
        # ``(x_i, shared, y_i)`` for the whole history, parents' included.
        entries = self._parent._entries()[: self._n_parent] if self._parent else []
        for row, y in zip(self._rows, self._y, strict=True):
            shared = row.__class__ is not int
            entries.append((row if shared else self._X[row], shared, y))
        return entries

    def transformed(self, basis: Tensor) -> SGDLeastSquares:
        r"""This solver with every feature ``x`` replaced by ``basis @ x``.

        For a ``D x d`` ``basis`` with orthonormal columns, inner products and
        norms are unchanged, so the result is the solver SGD would have become
        on the mapped features, sample for sample (``theta`` maps to ``basis @
        theta``); the next steps draw the same indices. Shared rows map to
        shared rows, one product per distinct row. ``O(n D)`` once.

        Args:
            basis: A ``D x d`` tensor with orthonormal columns.

        Returns:
            A new ``D``-dimensional solver with its own history.
        """
        other = copy.copy(self)
        other.dim = basis.shape[0]
        other.unscaled_theta = basis @ self.unscaled_theta
        other.average = basis @ self.average
        other._parent, other._n_parent = None, 0
        other._uniforms = list(self._uniforms)
        entries = self._entries()
        copied = [x for x, shared, _ in entries if not shared]
        capacity = max(64, len(copied))
        other._X = basis.new_empty(capacity, other.dim)
        if copied:
            torch.mm(torch.stack(copied), basis.mT, out=other._X[: len(copied)])
        other._num_copied = len(copied)
        mapped: dict[int, Tensor] = {}
        other._rows, other._y = [], []
        k = 0
        for x, shared, y in entries:
            if shared:
                if id(x) not in mapped:
                    mapped[id(x)] = basis @ x
                other._rows.append(mapped[id(x)])
            else:
                other._rows.append(k)
                k += 1
            other._y.append(y)
        return other

    @property
    def estimate(self) -> Tensor:
        r"""The averaged iterate if averaging, else the last one."""
        return self.average if self.averaging else self.theta

    def observe(self, x: Tensor, y: float | Tensor, validate: bool = True) -> int:
        r"""Append one observation and take one SGD step.

        Args:
            x: A ``d`` tensor of features (a norm above 1 scales the steps down,
                see :attr:`step_scale`).
            y: The target.
            validate: Check shape and finiteness (callers that already checked
                a whole batch pass False: the checks cost more than the step).

        Returns:
            The history index ``i_n`` the step was taken on, so that a
            :class:`WidthTracker` can step on the same sample.
        """
        theta = self.unscaled_theta
        x = torch.as_tensor(x, dtype=theta.dtype, device=theta.device)
        if validate:
            if x.shape != (self.dim,):
                raise BotorchTensorDimensionError(
                    f"x must have shape ({self.dim},), got {tuple(x.shape)}."
                )
            if not bool(torch.isfinite(x).all()):
                raise InputDataError("Observation contains NaN or infinite values.")
        y = float(y)
        if validate and not math.isfinite(y):
            raise InputDataError("Observation contains NaN or infinite values.")
        return self._observe_checked(x, y, float(x @ x))[0]

    def observe_shared(
        self, x: Tensor, y: float, sq_norm: float
    ) -> tuple[int, Tensor, float, float]:
        r"""Append a checked observation whose features are kept, not copied.

        For a caller that owns ``x`` and never writes it again (a row of a
        private copy of a fixed arm set): the history holds ``x`` itself, and
        steps on it read it with no kernel.

        Args:
            x: A finite ``d`` tensor in the solver's dtype and device.
            y: The finite target.
            sq_norm: ``x^T x``.

        Returns:
            ``(i, x_i, fold, delta)``: the step's history index and sample, and
            its move ``unscaled_theta <- fold * unscaled_theta + delta * x_i``
            (a caller keeping ``V @ unscaled_theta`` for fixed ``V`` follows it
            with ``V x_i``).
        """
        self._rows.append(x)
        return self._appended(y, sq_norm)

    def _observe_checked(
        self, x: Tensor, y: float, sq_norm: float
    ) -> tuple[int, Tensor, float, float]:
        # ``observe_shared`` for a checked ``d`` tensor that is copied.
        k = self._num_copied
        if k == self._X.shape[0]:
            # Amortised O(d) appends: double the buffer when it is full.
            self._X = torch.cat([self._X, torch.empty_like(self._X)])
        self._X[k] = x
        self._num_copied = k + 1
        self._rows.append(k)
        return self._appended(y, sq_norm)

    def _appended(self, y: float, sq_norm: float) -> tuple[int, Tensor, float, float]:
        self._y.append(y)
        self.n += 1
        self.sum_sq_norms += sq_norm
        # Before the step: it may be taken on this very sample.
        if sq_norm > 1.0:
            self.step_scale = min(self.step_scale, 1.0 / sq_norm)
        return self._step()

    def observe_batch(self, X: Tensor, Y: Tensor) -> None:
        r"""Observe rows in order (each step depends on the previous one).

        Args:
            X: A ``k x d`` tensor of features.
            Y: A ``k`` (or ``k x 1``) tensor of targets.
        """
        for x, y in zip(X, Y.reshape(-1), strict=True):
            self.observe(x, y)

    def sgd_step(self) -> int:
        r"""One step on a sample drawn uniformly from the history (no new data).

        Returns:
            The history index the step was taken on (-1 for an empty history).
        """
        if self.n == 0:
            return -1
        return self._step()[0]

    def _step(self) -> tuple[int, Tensor, float, float]:
        # theta <- (1 - gamma lambda_n) theta + gamma (y_i - theta^T x_i) x_i, as
        # unscaled <- fold * unscaled + delta * x_i with the shrink moved into
        # theta_scale (``fold`` is 1 unless the scale left its safe range and was
        # folded into the tensor). Returns ``(i, x_i, fold, delta)``, so that a
        # caller keeping ``V @ unscaled_theta`` for fixed vectors ``V`` updates it
        # with the products ``V @ x_i`` it already has.
        n = self.n
        i = self.draw_index()
        x_i, y_i = self.sample(i)
        gamma = self.step(n) * self.step_scale
        theta = self.unscaled_theta
        scale = self.theta_scale
        residual = y_i - scale * float(torch.dot(theta, x_i))
        if self.ridge is not None:
            scale *= 1.0 - gamma * self.ridge(n)
        fold = 1.0
        if not MIN_SCALE < scale < MAX_SCALE:
            # Shrinks near zero (or not positive) and overflows go into the tensor.
            fold, scale = scale, 1.0
            theta.mul_(fold)
        delta = gamma * residual / scale
        theta.add_(x_i, alpha=delta)
        self.theta_scale = scale
        if self.averaging:
            # A uniform average over all steps taken (extra steps at a fixed n
            # included), not an exponential one at rate 1 / n.
            self.num_steps += 1
            k = self.num_steps
            self.average.mul_(1.0 - 1.0 / k).add_(theta, alpha=scale / k)
        return i, x_i, fold, delta

    def isotropic_scale(self) -> float:
        r"""``trace(A_n) / d + n lambda_n``: an isotropic ``A_n + n lambda_n I``.

        The multiple of the identity with the same trace (``n = 1`` in the ridge
        term for an empty history, and 1 if that is zero).
        """
        n = max(self.n, 1)
        ridge = n * self.ridge(n) if self.ridge is not None else 0.0
        scale = self.sum_sq_norms / self.dim + ridge
        return scale if scale > 0 else 1.0

    def reference_solution(self) -> Tensor:
        r"""The exact target ``(A_n + n lambda_n I)^{-1} b_n``, in ``O(n d^2 + d^3)``.

        A diagnostic: what the iterate tracks. For fOLS-GD with a singular ``A_n``
        the minimum-norm least-squares solution is returned.
        """
        X, y = self.X.double(), self.y.double()
        A, b = X.mT @ X, X.mT @ y
        like = self.unscaled_theta
        if self.ridge is not None and self.n > 0:
            eye = torch.eye(self.dim, dtype=A.dtype, device=A.device)
            A = A + self.n * self.ridge(self.n) * eye
            return torch.linalg.solve(A, b).to(like)
        return (torch.linalg.pinv(A, hermitian=True) @ b).to(like)
