#!/usr/bin/env python3
r"""Points held in Nystrom coordinates, with the prior variance the embedding misses.

:class:`EmbeddedPoints` is the one store of embedded points: a bandit's arms
(:class:`~botorch_sketch.sketching.online.TrackedCandidates`) and an online
model's observations (:class:`~botorch_sketch.sketching.online.incremental.
IncrementalNystrom`). It keeps the inputs ``x_i``, their embedding ``z(x_i)``,
their prior variances ``k(x_i, x_i)`` and residual variances ``k(x_i, x_i) -
||z(x_i)||^2``, in buffers with spare rows and columns, so appending a point or
growing the inducing set by one point copies nothing most of the time
(amortised ``O(1)`` copies, where exact-size tensors would copy ``O(n m)`` per
step).

The embedding is stored coordinate by coordinate (a ``m' x n`` buffer; ``Z`` is
its transposed view, column-major): the per-step product of the online loops,
``Z P`` over every point, then runs as BLAS's column-sweeping ``gemv``. That
product is most of a bandit step at many arms, and its speed-up over the
row-by-row dot products of a row-major ``Z`` depends on the CPU: 1.7-2.7x at
``n = 20,000`` to ``100,000`` (1.4x at ``n = 1000``) on an AMD EPYC, 1.1-1.2x
on an Intel Xeon, never slower. Products of ``Z`` with a few columns are
better written ``(M^T Z^T)^T``, which reads the buffer as stored (on that Xeon
``Z @ M`` with ``Z`` column-major ran 2x slower than row-major at ``10^5``
points, the rewritten product 1.4x); square products and ``Z^T Z`` cost about
the same in either layout. A new coordinate is one contiguous row of the
buffer.

A store built with ``by_point=True`` keeps the transposed layout instead (a
``n x m'`` buffer, one point per row): gathering a few points' coordinates,
``Z[index]``, then reads one contiguous row per point rather than one cache
line per coordinate (2% of ``10^5`` points with 131 coordinates, one thread on
an Intel Xeon: 1.2 ms by point against 5.7 ms by coordinate, where a whole
``Z P`` took 11-13 ms in either layout). The lazy UCB step of
:class:`~botorch_sketch.sketching.online.TrackedCandidates` gathers, and
multiplies by many columns at once, so it takes this layout.
"""

from __future__ import annotations

from torch import Tensor

from botorch_sketch.sketching.embedding.chunks import chunk_size_for, row_chunks
from botorch_sketch.sketching.embedding.kernels import kernel_diagonal
from botorch_sketch.sketching.embedding.nystrom import (
    NystromEmbedding,
    residual_variance,
)
from botorch_sketch.sketching.posterior.weight_posterior import WeightPosterior


def grow_rows(buffer: Tensor, rows: int | None = None) -> Tensor:
    r"""A copy of ``buffer`` with at least ``rows`` rows (twice as many by default)."""
    doubled = max(2 * buffer.shape[0], 1)
    rows = doubled if rows is None else max(rows, doubled)
    grown = buffer.new_empty(rows, *buffer.shape[1:])
    grown[: buffer.shape[0]] = buffer
    return grown


def grow_columns(buffer: Tensor) -> Tensor:
    r"""A copy of the 2-d ``buffer`` with twice as many columns."""
    grown = buffer.new_empty(buffer.shape[0], max(2 * buffer.shape[1], 1))
    grown[:, : buffer.shape[1]] = buffer
    return grown


class EmbeddedPoints:
    r"""Inputs, their Nystrom embedding and residual prior variances.

    Example:
        >>> points = EmbeddedPoints(embedding, X)  # embeds X in chunks
        >>> var = points.posterior_variance(posterior)
        >>> c = points.add_coordinate(embedding.extended(x_new))  # O(n m)
    """

    def __init__(
        self,
        embedding: NystromEmbedding,
        X: Tensor,
        chunk_size: int | None = None,
        prior_variance: Tensor | None = None,
        embedded: Tensor | None = None,
        by_point: bool = False,
    ) -> None:
        r"""Embed the points, chunked.

        Args:
            embedding: The Nystrom embedding of the inducing set.
            X: A ``n x d`` tensor of points.
            chunk_size: Rows per chunk; by default about 8 MB per block at the
                current embedding dimension.
            prior_variance: The ``n`` prior variances ``k(x, x)``, if known.
            embedded: The ``n x m'`` embedding of ``X``, if already computed.
            by_point: Store the embedding one point per row (row-major ``Z``)
                instead of one coordinate per row (see the module docstring).
        """
        self.kernel = embedding.kernel
        self.chunk_size = chunk_size
        n, m = X.shape[0], embedding.dim
        self._X = X
        # By default ``Z`` transposed: coordinates by points (module docstring).
        self.by_point = by_point
        self._Z = X.new_empty(n, max(m, 1)) if by_point else X.new_empty(max(m, 1), n)
        self._residual = X.new_empty(n)
        if prior_variance is None:
            prior_variance = X.new_empty(n)
            for rows in row_chunks(n, chunk_size or chunk_size_for(1)):
                prior_variance[rows] = kernel_diagonal(self.kernel, X[rows])
        self._prior_variance = prior_variance
        self.num_points, self.dim = n, m
        self._views()
        self.reembed(embedding, embedded)

    @classmethod
    def empty(
        cls, embedding: NystromEmbedding, like: Tensor, capacity: int = 16
    ) -> EmbeddedPoints:
        r"""A store with no points, to :meth:`append` to.

        Args:
            embedding: The Nystrom embedding of the inducing set.
            like: A ``n x d`` tensor whose type, device and ``d`` the points share.
            capacity: The number of rows to allocate first.
        """
        points = cls(embedding, like[:0])
        points._X = like.new_empty(capacity, like.shape[-1])
        points._Z = like.new_empty(max(8, embedding.dim), capacity)  # column-major
        points._residual = like.new_empty(capacity)
        points._prior_variance = like.new_empty(capacity)
        points._views()
        return points

    def _chunk_size(self) -> int:
        return self.chunk_size or chunk_size_for(max(self.dim, 1))

    def product(self, M: Tensor) -> Tensor:
        r"""``Z M`` for a ``m' x k`` matrix ``M``, in the faster form for the layout.

        Column-major ``Z`` is read as stored by ``(M^T Z^T)^T`` (see the module
        docstring).

        Returns:
            A ``n x k`` tensor.
        """
        return self.Z @ M if self.by_point else (M.mT @ self.Z.mT).mT

    def _coordinates(self, rows: slice, m: int) -> Tensor:
        # The first ``m`` coordinates of points ``rows``: a view of the buffer.
        return self._Z[rows, :m] if self.by_point else self._Z[:m, rows].mT

    def _coordinate(self, rows: slice, j: int) -> Tensor:
        # Coordinate ``j`` of points ``rows``: a view of the buffer.
        return self._Z[rows, j] if self.by_point else self._Z[j, rows]

    def _reserve_coordinates(self, m: int, keep: int) -> None:
        # Room for ``m`` coordinates, keeping the first ``keep`` of them.
        axis = 1 if self.by_point else 0
        capacity = self._Z.shape[axis]
        if m <= capacity:
            return
        shape = list(self._Z.shape)
        shape[axis] = max(2 * capacity, m) if keep else 2 * m
        grown = self._Z.new_empty(shape)
        if keep:
            if self.by_point:
                grown[:, :keep] = self._Z[:, :keep]
            else:
                grown[:keep] = self._Z[:keep]
        self._Z = grown

    def _views(self) -> None:
        # Cached: a slice is a new view (a few microseconds) on every read.
        n = self.num_points
        self.X = self._X[:n]
        self.Z = self._coordinates(slice(0, n), self.dim)
        self.residual = self._residual[:n]
        self.prior_variance = self._prior_variance[:n]

    def append(self, x: Tensor, z: Tensor, prior_variance: Tensor) -> int:
        r"""Add one embedded point (amortised ``O(m)``).

        Args:
            x: A ``1 x d`` (or ``d``) input.
            z: Its ``1 x m'`` (or ``m'``) embedding.
            prior_variance: Its prior variance ``k(x, x)`` (one element).

        Returns:
            The point's row.
        """
        t = self.num_points
        if t == self._X.shape[0]:
            self._X = grow_rows(self._X)
            self._Z = grow_rows(self._Z) if self.by_point else grow_columns(self._Z)
            self._residual = grow_rows(self._residual)
            self._prior_variance = grow_rows(self._prior_variance)
        self._X[t] = x.reshape(-1)
        if self.by_point:
            self._Z[t, : self.dim] = z.reshape(-1)
        else:
            self._Z[: self.dim, t] = z.reshape(-1)
        self._prior_variance[t] = prior_variance.reshape(())
        self.num_points = t + 1
        self._views()
        self._residual[t] = residual_variance(self._prior_variance[t], self.Z[t])
        return t

    def add_coordinate(self, embedding: NystromEmbedding) -> Tensor:
        r"""Add the new coordinate of ``embedding`` (grown by one point), ``O(n m)``.

        The new coordinate is read from the old ones
        (:meth:`NystromEmbedding.new_coordinate`), and the residual variances
        fall by its square.

        Args:
            embedding: The grown embedding, ``NystromEmbedding.extended``'s result.

        Returns:
            The ``n`` new coordinates.
        """
        m = self.dim
        self._reserve_coordinates(m + 1, keep=m)
        for rows in row_chunks(self.num_points, self._chunk_size()):
            c = embedding.new_coordinate(self.X[rows], self._coordinates(rows, m))
            self._coordinate(rows, m)[...] = c
            self._residual[rows] = (self._residual[rows] - c.pow(2)).clamp_min(0)
        self.dim = m + 1
        self._views()
        return self.Z[:, m]

    def reembed(
        self, embedding: NystromEmbedding, embedded: Tensor | None = None
    ) -> None:
        r"""Embed every point in a new embedding (``O(n m m')``, chunked).

        Args:
            embedding: The new Nystrom embedding.
            embedded: The ``n x m'`` embedding of the points, if already computed.
        """
        m = embedding.dim
        self._reserve_coordinates(m, keep=0)
        self.dim = m
        self._views()
        for rows in row_chunks(self.num_points, self._chunk_size()):
            X = self.X[rows]
            Z = embedding(X) if embedded is None else embedded[rows]
            self._coordinates(rows, m)[...] = Z
            self._residual[rows] = embedding.residual_variance(
                X, Z, prior_variance=self.prior_variance[rows]
            )

    def posterior_variance(self, posterior: WeightPosterior) -> Tensor:
        r"""The posterior variances of the points (``O(n m^2)``, chunked).

        Args:
            posterior: The weight posterior in the points' embedding.

        Returns:
            A ``posterior.batch_shape x n`` tensor (GP units).
        """

        def embedded(rows: slice) -> tuple[Tensor, Tensor]:
            return self.Z[rows], self.residual[rows]

        return posterior.chunked_variance(self.num_points, self._chunk_size(), embedded)
