#!/usr/bin/env python3
r"""SGD tracking of the LinUCB widths, the second half of fLinUCB-GD.

:class:`WidthTracker`: for a fixed set of vectors ``x_k`` it tracks
``phi_k ~ (A_n + n lambda_n I)^{-1} x_k`` by the same kind of resampled step
as :class:`~botorch_sketch.sketching.linear.SGDLeastSquares` (eq. (11) of
[Korda2015fast]_ with a ridge term), so that ``x_k^T phi_k`` approximates the
LinUCB width ``x_k^T (A_n + n lambda_n I)^{-1} x_k`` without any ``d x d``
matrix.

References

.. [Korda2015fast]
    N. Korda, Prashanth L.A., R. Munos. Fast gradient descent for drifting least
    squares regression, with application to bandits. AAAI 2015.
"""

from __future__ import annotations

import torch
from botorch.exceptions.errors import BotorchTensorDimensionError
from torch import Tensor

from botorch_sketch.sketching.linear.schedules import HarmonicStep, Schedule
from botorch_sketch.sketching.linear.sgd import MAX_SCALE, MIN_SCALE

# Steps between exact recomputations of a WidthTracker's kept quadratic forms.
REFRESH_PERIOD = 256


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

    As in :class:`~botorch_sketch.sketching.linear.SGDLeastSquares`, steps are
    divided by the largest squared norm of the ``x_i`` when it exceeds 1 (the
    contraction ``1 - gamma ||x_i||^2`` along ``x_i`` must stay above -1): the
    solver's :attr:`~SGDLeastSquares.step_scale` if the caller passes it, else
    the tracker's own over the samples it stepped on.

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
