#!/usr/bin/env python3
r"""SGD tracking of a drifting least-squares solution: fOLS-GD and fRLS-GD.

After the ``n``-th observation, one stochastic gradient step is taken on a
sample ``i_n`` drawn uniformly from the *whole* history [Korda2015fast]_:

``theta <- theta + gamma_n ((y_i - theta^T x_i) x_i - lambda_n theta)``

With ``lambda_n = 0`` (fOLS-GD) the iterate tracks the least-squares solution
``A_n^{-1} b_n``; with a ridge schedule (fRLS-GD) the fixed point of the mean
update is ``(A_n + n lambda_n I)^{-1} b_n``. Each step costs ``O(d)``; the
history is kept (``O(n d)`` memory) because samples are redrawn from it.

Step sizes and ridge schedules are small callables of ``n``, so a policy can
swap them; the random generator is explicit. Schedules are written for
features of norm at most 1, the setting of the paper's theorems; the solvers
divide every step by the largest squared feature norm seen so far when it
exceeds 1 (:attr:`SGDLeastSquares.step_scale`), so features on any scale give
the same iterates as features rescaled to unit norm, instead of diverging.

:class:`WidthTracker` is the second half of fLinUCB-GD: for a fixed set of
vectors ``x_k`` it tracks ``phi_k ~ (A_n + n lambda_n I)^{-1} x_k`` by the same
kind of resampled step (eq. (11) of [Korda2015fast]_ with a ridge term), so
that ``x_k^T phi_k`` approximates the LinUCB width ``x_k^T (A_n + n lambda_n
I)^{-1} x_k`` without any ``d x d`` matrix.

References

.. [Korda2015fast]
    N. Korda, Prashanth L.A., R. Munos. Fast gradient descent for drifting least
    squares regression, with application to bandits. AAAI 2015.
"""

from __future__ import annotations

import copy
import math
from abc import ABC, abstractmethod

import torch
from botorch.exceptions.errors import BotorchTensorDimensionError, InputDataError
from torch import Tensor

# The range a float scale factor is kept in before it is folded into its tensor:
# far from underflow and overflow, and rare to leave (a shrink of 1 - 1/(4n) per
# step takes it below 1e-100 only after astronomically many steps).
MIN_SCALE = 1e-100
MAX_SCALE = 1e100
# Steps between exact recomputations of a WidthTracker's kept quadratic forms.
REFRESH_PERIOD = 256
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


class Schedule(ABC):
    r"""A positive sequence indexed by the number of observations ``n >= 1``."""

    @abstractmethod
    def __call__(self, n: int) -> float:
        r"""The value at ``n``."""


class HarmonicStep(Schedule):
    r"""``gamma_n = c / (4 (c + n))``, Theorem 1 of [Korda2015fast]_.

    The ``O(n^{-1/2})`` tracking rate needs ``mu c / 4`` in ``(2/3, 1)``, ``mu`` the
    smallest eigenvalue of the normalised design ``A_n / n`` (``1/d`` for inputs
    uniform on the unit sphere, so ``c = 3.5 d`` is a safe choice there). The step
    never exceeds 1/4, so it is stable for ``||x|| <= 1``; the solvers scale it
    down for larger features.
    """

    def __init__(self, c: float) -> None:
        r"""Configure the schedule.

        Args:
            c: The constant ``c > 0``.
        """
        if c <= 0:
            raise InputDataError(f"c must be positive, got {c}.")
        self.c = c

    def __call__(self, n: int) -> float:  # noqa: D102
        return self.c / (4 * (self.c + n))


class OffsetHarmonicStep(Schedule):
    r"""``gamma_n = 1 / (n_0 + n)``, the step of the paper's experiments (n_0 = 100)."""

    def __init__(self, offset: float = 100.0) -> None:
        r"""Configure the schedule.

        Args:
            offset: ``n_0 > 0``.
        """
        if offset <= 0:
            raise InputDataError(f"offset must be positive, got {offset}.")
        self.offset = offset

    def __call__(self, n: int) -> float:  # noqa: D102
        return 1.0 / (self.offset + n)


class Constant(Schedule):
    r"""A constant value (a constant step, or a constant ridge per sample)."""

    def __init__(self, value: float) -> None:
        r"""Configure the schedule.

        Args:
            value: The value, at least zero.
        """
        if value < 0:
            raise InputDataError(f"value must be non-negative, got {value}.")
        self.value = value

    def __call__(self, n: int) -> float:  # noqa: D102
        return self.value


class InverseRidge(Schedule):
    r"""``lambda_n = lambda / n``: the classic ridge ``A_n + lambda I``.

    With ``lambda`` the noise variance this is the GP/Bayesian posterior mean of a
    linear model with a standard normal prior.
    """

    def __init__(self, ridge: float) -> None:
        r"""Configure the schedule.

        Args:
            ridge: ``lambda >= 0``.
        """
        if ridge < 0:
            raise InputDataError(f"ridge must be non-negative, got {ridge}.")
        self.ridge = ridge

    def __call__(self, n: int) -> float:  # noqa: D102
        return self.ridge / n


class PowerRidge(Schedule):
    r"""``lambda_n = scale * n^{-(1 - alpha)}``, fLinUCB-GD's ridge (alpha 0.6).

    The unnormalised ridge ``n lambda_n = scale * n^alpha`` grows with ``n``: this
    is not the posterior of a fixed prior, and the paper proves nothing for it.
    """

    def __init__(self, alpha: float = 0.6, scale: float = 1.0) -> None:
        r"""Configure the schedule.

        Args:
            alpha: The exponent, in ``(0, 1)``.
            scale: A positive multiplier.
        """
        if not 0 < alpha < 1 or scale <= 0:
            raise InputDataError(
                f"need 0 < alpha < 1 and scale > 0, got {alpha}, {scale}."
            )
        self.alpha = alpha
        self.scale = scale

    def __call__(self, n: int) -> float:  # noqa: D102
        return self.scale * n ** (-(1 - self.alpha))


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


def width_step(dim: int) -> HarmonicStep:
    r"""The default step of :class:`WidthTracker`: ``HarmonicStep(100 d)``."""
    return HarmonicStep(100.0 * dim)


class WidthTracker:
    r"""SGD tracking of ``phi_k = (A_n + n lambda_n I)^{-1} x_k`` for ``K`` vectors.

    Eq. (11) of [Korda2015fast]_ with the ridge term of fRLS-GD added:

    ``phi_k <- phi_k + gamma_n (x_k / n - (phi_k^T x_i) x_i - lambda_n phi_k)``,

    a resampled gradient step on ``phi^T (A_n / n + lambda_n I) phi / 2 -
    x_k^T phi / n``, whose minimiser is ``phi_k``. All ``K`` vectors step on the
    same resampled ``x_i``, in one ``O(K d)`` tensor operation, so no ``d x d``
    matrix is ever formed.

    Why this form and not ``psi = n phi`` (whose target is ``O(1)``): when
    ``A_n`` grows by ``x_n x_n^T``, ``phi``'s target moves only along the new
    data, and with the classic ridge ``lambda_n = lambda / n`` it does not move
    at all in directions no data have reached (it stays ``x / lambda``). The
    target of ``psi`` is rescaled by ``n / (n - 1)`` everywhere at every step,
    and in unexplored directions grows like ``n / lambda`` at a rate of only
    ``gamma_n lambda / n``: its widths there collapse and the bandit stops
    exploring. The ridge keeps the target finite when ``A_n`` is singular
    (fewer observations than dimensions, or sparse features).

    As in :class:`SGDLeastSquares`, steps are divided by the largest squared
    norm of the ``x_i`` when it exceeds 1 (the contraction ``1 - gamma
    ||x_i||^2`` along ``x_i`` must stay above -1): the solver's
    :attr:`~SGDLeastSquares.step_scale` if the caller passes it, else the
    tracker's own over the samples it stepped on.

    The price of this form is that along the data ``phi``'s target shrinks like
    ``1 / n``, which a step ``gamma_n = c / (4 (c + n))`` follows only with a
    relative lag of about ``4 / (c mu)``: Theorem 1's ``c = 3.5 / mu`` leaves the
    widths several times too large. Use a much larger ``c``
    (:func:`width_step`, ``c = 100 d``: a step of about 1/4 over any practical
    horizon), which tracks the widths to tens of percent.

    The estimates are kept as ``phi = a V + b R`` (``V`` the vectors, ``a`` and
    ``b > 0`` floats, ``R`` a ``K x d`` tensor), together with the forms ``x_k^T
    R_k``: the shrink and the ``(gamma / n) V`` term of a step move only ``a``
    and ``b``, so a step is one product ``[R; V] x_i``, one rank-one update of
    ``R`` and an ``O(K)`` update of the forms. ``phi`` is folded back into
    ``R`` every few hundred steps, which bounds the rounding that the
    representation adds.

    Example:
        >>> tracker = WidthTracker(arms, step=HarmonicStep(35.0), ridge=None)
        >>> i = solver.observe(x, y)
        >>> tracker.step(solver.sample(i)[0], solver.n, solver.step_scale)
        >>> tracker.quadratic_forms()  # ~ x_k^T A_n^{-1} x_k
    """

    def __init__(
        self,
        vectors: Tensor,
        step: Schedule,
        ridge: Schedule | None = None,
        initial_scale: float = 1.0,
    ) -> None:
        r"""Start tracking.

        Args:
            vectors: A ``K x d`` tensor of the vectors ``x_k``.
            step: The step-size schedule ``gamma_n``.
            ridge: The ridge schedule ``lambda_n``; None for none (the paper's
                unregularised eq. (11)).
            initial_scale: The initial guess is ``phi_k = x_k / initial_scale``,
                exact when ``A_n + n lambda_n I = initial_scale * I``
                (see :meth:`SGDLeastSquares.isotropic_scale`).
        """
        if vectors.ndim != 2:
            raise BotorchTensorDimensionError(
                f"vectors must be K x d, got shape {tuple(vectors.shape)}."
            )
        self.step_size = step
        self.ridge = ridge
        K = vectors.shape[0]
        # [R; V] in one buffer, so that one matrix-vector product gives both
        # R x_i and V x_i; phi = a V + b R with float a and b > 0.
        self._stack = vectors.new_zeros(2 * K, vectors.shape[1])
        self._a = 1.0 / initial_scale
        self._b = 1.0
        #: ``x_k^T R_k``, kept by the steps (``K``).
        self._forms = vectors.new_zeros(K)
        self._products = vectors.new_empty(2 * K)
        self._coefficients = vectors.new_empty(K)
        self._views()
        self._set_vectors(vectors)
        #: ``1 / max(1, largest squared norm of the x_i stepped on)``.
        self.step_scale = 1.0
        self._steps_since_refresh = 0
        # ``step`` updates the buffers in place; a copy shares them until either
        # steps, which then clones them.
        self._owns_buffers = True

    def _views(self) -> None:
        K = self._forms.shape[0]
        self._offsets, self._vectors = self._stack[:K], self._stack[K:]
        #: The tracked vectors ``V`` (``K x d``): the tracker's own copy.
        self.vectors = self._vectors
        #: ``V x_i`` of the last step (``K``): what a caller keeping ``V theta``
        #: needs to follow a step ``theta += delta x_i`` (read before the next
        #: step, which overwrites it).
        self.vector_products = self._products[K:]
        self._offset_products = self._products[:K]

    def _set_vectors(self, vectors: Tensor) -> None:
        self._vectors.copy_(vectors)
        #: ``x_k^T x_k`` (``K``).
        self.sq_norms = torch.linalg.vecdot(self._vectors, self._vectors)

    def __copy__(self) -> WidthTracker:
        other = WidthTracker.__new__(WidthTracker)
        other.__dict__.update(self.__dict__)
        self._owns_buffers = other._owns_buffers = False
        return other

    def _own_buffers(self) -> None:
        self._stack = self._stack.clone()
        self._forms = self._forms.clone()
        self._products = torch.empty_like(self._products)
        self._coefficients = torch.empty_like(self._coefficients)
        self._views()
        self._owns_buffers = True

    @property
    def phi(self) -> Tensor:
        r"""The ``K x d`` estimates ``phi_k`` (a new tensor, left alone by steps)."""
        return torch.mul(self._offsets, self._b).add_(self._vectors, alpha=self._a)

    def _refresh(self, vectors: Tensor | None = None) -> None:
        # phi into R (a = 0, b = 1), the new vectors if given, and the forms
        # recomputed: bounds the cancellation between a V and b R and the
        # drift of the kept forms.
        if not self._owns_buffers:
            self._own_buffers()
        self._offsets.mul_(self._b).add_(self._vectors, alpha=self._a)
        self._a, self._b = 0.0, 1.0
        if vectors is not None:
            self._set_vectors(vectors)
        torch.linalg.vecdot(self._vectors, self._offsets, out=self._forms)
        self._steps_since_refresh = 0

    def retarget(self, vectors: Tensor) -> None:
        r"""Track new vectors of the same ``K x d`` shape.

        Warm-started from the old ``phi``, as in the paper's Alg. 2 for arm sets
        that change.
        """
        if vectors.shape != self.vectors.shape:
            raise BotorchTensorDimensionError(
                f"vectors must have shape {tuple(self.vectors.shape)}, got "
                f"{tuple(vectors.shape)}."
            )
        self._refresh(vectors)

    def step(self, x_i: Tensor, n: int, step_scale: float | None = None) -> None:
        r"""One step of every ``phi_k`` on the resampled history vector ``x_i``.

        Args:
            x_i: A ``d`` tensor, the sample ``x_{i_n}`` drawn from the history.
            n: The number of observations so far (``n >= 1``).
            step_scale: The solver's :attr:`SGDLeastSquares.step_scale`, which
                spares a norm per step; None to track the largest norm here.
        """
        if step_scale is None:
            self.step_scale = min(self.step_scale, 1.0 / max(float(x_i @ x_i), 1.0))
            step_scale = self.step_scale
        gamma = self.step_size(n) * step_scale
        shrink = 1.0 - gamma * (self.ridge(n) if self.ridge is not None else 0.0)
        if not self._owns_buffers:
            self._own_buffers()
        # With phi = a V + b R, the step
        #   phi <- shrink phi - gamma (phi x_i) x_i^T + (gamma / n) V
        # is a <- shrink a + gamma / n, b <- shrink b and a rank-one update of R
        # by u = phi x_i / b = R x_i + (a / b) V x_i: three O(K d) kernels, one
        # of them the product [R; V] x_i, and the forms x_k^T R_k follow in O(K).
        a, b = self._a, self._b
        torch.mv(self._stack, x_i, out=self._products)
        u = torch.add(
            self._offset_products,
            self.vector_products,
            alpha=a / b,
            out=self._coefficients,
        )
        b_next = b * shrink
        if MIN_SCALE < b_next < MAX_SCALE:
            self._offsets.addr_(u, x_i, alpha=-gamma / shrink)
            self._forms.addcmul_(u, self.vector_products, value=-gamma / shrink)
            self._b = b_next
        else:
            # b would leave its safe range (or the shrink is not positive): fold
            # it into R.
            self._offsets.mul_(b_next).addr_(u, x_i, alpha=-gamma * b)
            self._forms.mul_(b_next).addcmul_(u, self.vector_products, value=-gamma * b)
            self._b = 1.0
        self._a = shrink * a + gamma / n
        self._steps_since_refresh += 1
        if self._steps_since_refresh == REFRESH_PERIOD:
            self._refresh()

    def transformed(self, basis: Tensor, vectors: Tensor) -> WidthTracker:
        r"""This tracker with every vector ``x`` replaced by ``basis @ x``.

        The companion of :meth:`SGDLeastSquares.transformed`: ``phi_k`` maps to
        ``basis @ phi_k``.

        Args:
            basis: A ``D x d`` tensor with orthonormal columns.
            vectors: The ``K x D`` mapped vectors, ``self.vectors @ basis^T``
                (passed, so that a caller holding them exactly keeps them).

        Returns:
            A new tracker of ``vectors``.
        """
        other = WidthTracker(vectors, self.step_size, self.ridge)
        torch.mm(self.phi, basis.mT, out=other._offsets)
        other._a = 0.0
        torch.linalg.vecdot(other._vectors, other._offsets, out=other._forms)
        other.step_scale = self.step_scale
        return other

    def inverse_products(self) -> Tensor:
        r"""The ``K x d`` estimates of ``(A_n + n lambda_n I)^{-1} x_k``."""
        return self.phi

    def scaled_quadratic_forms(self) -> tuple[Tensor, float]:
        r"""``(t, s)`` with ``s * t`` the :meth:`quadratic_forms`, before clamping.

        ``s > 0``; ``t`` is a new ``K`` tensor. One kernel: what a policy that
        only ranks ``theta^T x_k + kappa sqrt(x_k^T phi_k)`` needs.
        """
        b = self._b
        return torch.add(self._forms, self.sq_norms, alpha=self._a / b), b

    def quadratic_forms(self) -> Tensor:
        r"""The ``K`` estimates of ``x_k^T (A_n + n lambda_n I)^{-1} x_k``.

        Clamped at zero: a stale or noisy ``phi`` can give a negative product.
        """
        forms, scale = self.scaled_quadratic_forms()
        return forms.mul_(scale).clamp_min_(0)
