#!/usr/bin/env python3
r"""Matrices that grow by a row and a column at a time, inside spare room.

An online model adds one inducing point per insertion, and its ``m x m``
matrices (the embedding's root, the Gram matrix of the statistics) gain one row
and one column. Allocating and copying them afresh costs a pass over
``m^2`` entries, and the first touch of the new memory costs more still: at
``m`` near 1000 that was most of an insertion. A :class:`GrowthBuffer` keeps
the matrix as the top-left block of a larger buffer and hands out the grown
block as a view, so that an insertion writes only its new row and column.

A block is grown in place only if it is the buffer's newest: the entries past
it were never written, and views of earlier blocks (an older embedding that a
caller still holds) keep their values. Growing any other block copies it into
a new buffer, as allocating would.
"""

from __future__ import annotations

from torch import Tensor

#: Spare rows and columns of a new buffer, as a fraction of its block.
SPARE_FRACTION = 0.5
#: At least this many spare rows and columns.
MIN_SPARE = 16


class GrowthBuffer:
    r"""A buffer with spare rows and columns, and the size of its newest block."""

    def __init__(self, buffer: Tensor, rows: int, cols: int) -> None:
        r"""Wrap a buffer whose top-left ``rows x cols`` block is in use.

        Args:
            buffer: A ``R x C`` tensor, zero outside the block.
            rows: The rows in use.
            cols: The columns in use.
        """
        self.buffer = buffer
        self.rows = rows
        self.cols = cols

    def holds(self, matrix: Tensor) -> bool:
        r"""Whether ``matrix`` is this buffer's newest block (a view of it)."""
        return (
            matrix.shape == (self.rows, self.cols)
            and matrix.data_ptr() == self.buffer.data_ptr()
            and (self.rows == 0 or matrix.stride() == self.buffer.stride())
        )


def grown_block(
    matrix: Tensor, store: GrowthBuffer | None, rows: int, cols: int
) -> tuple[Tensor, GrowthBuffer]:
    r"""A ``rows x cols`` block whose top-left is ``matrix``, the rest zero.

    Args:
        matrix: A ``r x c`` tensor with ``r <= rows`` and ``c <= cols``.
        store: The buffer ``matrix`` may live in (None: none).
        rows: The rows of the grown block.
        cols: Its columns.

    Returns:
        The block, a view of a buffer, and that buffer: ``store`` itself,
        written in place, when ``matrix`` is its newest block and the buffer
        has room; else a new buffer with room to spare and ``matrix`` copied in.
    """
    r, c = matrix.shape
    if (
        store is not None
        and store.holds(matrix)
        and store.buffer.shape[0] >= rows
        and store.buffer.shape[1] >= cols
    ):
        store.rows, store.cols = rows, cols
        return store.buffer[:rows, :cols], store
    capacity = [
        size + max(MIN_SPARE, int(SPARE_FRACTION * size)) for size in (rows, cols)
    ]
    buffer = matrix.new_zeros(*capacity)
    buffer[:r, :c] = matrix
    return buffer[:rows, :cols], GrowthBuffer(buffer, rows, cols)
