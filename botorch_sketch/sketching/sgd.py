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
from abc import ABC, abstractmethod

import torch
from botorch.exceptions.errors import BotorchTensorDimensionError, InputDataError
from torch import Tensor


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
        self.theta = torch.zeros(dim, dtype=dtype, device=device)
        self.average = torch.zeros_like(self.theta)
        #: ``1 / max(1, largest squared feature norm so far)``, multiplying every
        #: step (a float: tensor arithmetic on the step doubled its cost).
        self.step_scale = 1.0
        #: The number of SGD steps taken (the Polyak average is over these).
        self.num_steps = 0
        # The history is a read-only prefix (shared with the solver this one was
        # forked from, see :meth:`fork`) followed by an own growing buffer.
        self._base_X = torch.empty(0, dim, dtype=dtype, device=device)
        self._base_y = torch.empty(0, dtype=dtype, device=device)
        self._X = torch.empty(64, dim, dtype=dtype, device=device)
        self._y = torch.empty(64, dtype=dtype, device=device)
        self.n = 0
        # Uniforms are drawn from the generator in blocks: one draw per step
        # would cost more than the O(d) step itself for d in the thousands.
        self._uniforms: list[float] = []

    @property
    def _n_base(self) -> int:
        return self._base_X.shape[0]

    @property
    def X(self) -> Tensor:
        r"""The ``n x d`` history of features."""
        own = self._X[: self.n - self._n_base]
        return torch.cat([self._base_X, own]) if self._n_base else own

    @property
    def y(self) -> Tensor:
        r"""The ``n`` history of targets."""
        own = self._y[: self.n - self._n_base]
        return torch.cat([self._base_y, own]) if self._n_base else own

    def sample(self, i: int) -> tuple[Tensor, Tensor]:
        r"""The ``i``-th observation ``(x_i, y_i)`` of the history, ``0 <= i < n``."""
        if i < self._n_base:
            return self._base_X[i], self._base_y[i]
        return self._X[i - self._n_base], self._y[i - self._n_base]

    def draw_index(self) -> int:
        r"""An index drawn uniformly from the history (``n >= 1``)."""
        if not self._uniforms:
            device = self.generator.device if self.generator is not None else "cpu"
            block = torch.rand(
                1024, generator=self.generator, dtype=torch.double, device=device
            )
            self._uniforms = block.tolist()[::-1]
        return min(int(self._uniforms.pop() * self.n), self.n - 1)

    def fork(self) -> SGDLeastSquares:
        r"""A copy that shares the history so far, in ``O(d)`` time and memory.

        The copy reads the first ``n`` observations from this solver's buffer
        (appends only ever write past them, so neither solver disturbs the
        other) and appends its own observations to a fresh buffer. This is what
        makes ``condition_on_observations`` of a model an ``O(d)`` update rather
        than an ``O(n d)`` copy. The generator is shared.
        """
        other = copy.copy(self)
        other._base_X, other._base_y = self.X, self.y
        other._X = self._X.new_empty(16, self.dim)
        other._y = self._y.new_empty(16)
        other.theta = self.theta.clone()
        other.average = self.average.clone()
        other._uniforms = list(self._uniforms)
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
        x = torch.as_tensor(x, dtype=self.theta.dtype, device=self.theta.device)
        y = torch.as_tensor(y, dtype=self.theta.dtype, device=self.theta.device)
        if validate:
            if x.shape != (self.dim,):
                raise BotorchTensorDimensionError(
                    f"x must have shape ({self.dim},), got {tuple(x.shape)}."
                )
            if not bool(torch.isfinite(x).all() and torch.isfinite(y).all()):
                raise InputDataError("Observation contains NaN or infinite values.")
        return self._observe_checked(x, y.reshape(()), float(x @ x))[0]

    def _observe_checked(
        self, x: Tensor, y: float | Tensor, sq_norm: float
    ) -> tuple[int, Tensor]:
        # ``observe`` for a checked ``d`` tensor in the solver's dtype and
        # device, with its squared norm known; returns the step's index and
        # sample (so that a width tracker steps on it without reading it again).
        own = self.n - self._n_base
        if own == self._X.shape[0]:
            # Amortised O(d) appends: double the buffer when it is full.
            self._X = torch.cat([self._X, torch.empty_like(self._X)])
            self._y = torch.cat([self._y, torch.empty_like(self._y)])
        self._X[own] = x
        self._y[own] = y
        self.n += 1
        # Before the step: it may be taken on this very sample.
        self.step_scale = min(self.step_scale, 1.0 / max(sq_norm, 1.0))
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

    def _step(self) -> tuple[int, Tensor]:
        i = self.draw_index()
        x_i, y_i = self.sample(i)
        gamma = self.step(self.n) * self.step_scale
        residual = y_i - self.theta @ x_i
        # theta <- (1 - gamma lambda_n) theta + gamma (y_i - theta^T x_i) x_i
        shrunk = (
            self.theta * (1.0 - gamma * self.ridge(self.n))
            if self.ridge is not None
            else self.theta
        )
        self.theta = torch.addcmul(shrunk, residual, x_i, value=gamma)
        if self.averaging:
            # A uniform average over all steps taken (extra steps at a fixed n
            # included), not an exponential one at rate 1 / n.
            self.num_steps += 1
            self.average = self.average + (self.theta - self.average) / self.num_steps
        return i, x_i

    def isotropic_scale(self) -> float:
        r"""``trace(A_n) / d + n lambda_n``: an isotropic ``A_n + n lambda_n I``.

        The multiple of the identity with the same trace (``n = 1`` in the ridge
        term for an empty history, and 1 if that is zero).
        """
        n = max(self.n, 1)
        ridge = n * self.ridge(n) if self.ridge is not None else 0.0
        # O(n d), but only paid when a tracker starts, not per step.
        scale = float(self.X.square().sum()) / self.dim + ridge
        return scale if scale > 0 else 1.0

    def reference_solution(self) -> Tensor:
        r"""The exact target ``(A_n + n lambda_n I)^{-1} b_n``, in ``O(n d^2 + d^3)``.

        A diagnostic: what the iterate tracks. For fOLS-GD with a singular ``A_n``
        the minimum-norm least-squares solution is returned.
        """
        X, y = self.X.double(), self.y.double()
        A, b = X.mT @ X, X.mT @ y
        if self.ridge is not None and self.n > 0:
            eye = torch.eye(self.dim, dtype=A.dtype, device=A.device)
            A = A + self.n * self.ridge(self.n) * eye
            return torch.linalg.solve(A, b).to(self.theta)
        return (torch.linalg.pinv(A, hermitian=True) @ b).to(self.theta)


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
        self.vectors = vectors
        self.phi = vectors / initial_scale
        #: ``1 / max(1, largest squared norm of the x_i stepped on)``.
        self.step_scale = 1.0
        # ``step`` updates ``phi`` in place (two ``K x d`` allocations fewer per
        # step); a copy shares it until either steps, which then clones it.
        self._owns_phi = True

    def __copy__(self) -> WidthTracker:
        other = WidthTracker.__new__(WidthTracker)
        other.__dict__.update(self.__dict__)
        self._owns_phi = other._owns_phi = False
        return other

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
        self.vectors = vectors

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
        # phi <- shrink phi - gamma (phi^T x_i) x_i^T + (gamma / n) x: two
        # kernels in place (the shrink rides on the rank-one update's beta).
        if not self._owns_phi:
            self.phi = self.phi.clone()
            self._owns_phi = True
        projection = self.phi @ x_i
        self.phi.addr_(projection, x_i, beta=shrink, alpha=-gamma).add_(
            self.vectors, alpha=gamma / n
        )

    def inverse_products(self) -> Tensor:
        r"""The ``K x d`` estimates of ``(A_n + n lambda_n I)^{-1} x_k``."""
        return self.phi

    def quadratic_forms(self) -> Tensor:
        r"""The ``K`` estimates of ``x_k^T (A_n + n lambda_n I)^{-1} x_k``.

        Clamped at zero: a stale or noisy ``phi`` can give a negative product.
        """
        return torch.linalg.vecdot(self.vectors, self.phi).clamp_min_(0)
