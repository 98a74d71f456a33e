#!/usr/bin/env python3
r"""Row chunking, so that ``n x m`` work never holds more than one chunk in memory."""

from __future__ import annotations

from collections.abc import Iterator

from botorch_sketch.checks import checked_count

# About 8 MB of float64 per chunk of an ``n x m`` matrix; a kernel evaluation holds
# a few such blocks at once (distances, exponentials, gradients).
DEFAULT_CHUNK_ELEMENTS = 2**20


def chunk_size_for(width: int, max_elements: int = DEFAULT_CHUNK_ELEMENTS) -> int:
    r"""Number of rows per chunk so that a ``rows x width`` block stays bounded.

    Args:
        width: The number of columns of the block (e.g. the inducing-set size).
        max_elements: The largest number of elements one block may have.

    Returns:
        A positive number of rows.
    """
    return max(1, max_elements // max(width, 1))


def row_chunks(n: int, chunk_size: int) -> Iterator[slice]:
    r"""Slices ``[0, c), [c, 2c), ...`` that cover ``range(n)``.

    Args:
        n: The number of rows.
        chunk_size: The number of rows per slice.

    Yields:
        Consecutive slices of at most ``chunk_size`` rows.

    Raises:
        InputDataError: When ``chunk_size`` is not a positive integer (0 failed
            in ``range`` without naming it; a negative size gave no slices, and
            statistics of no rows).
    """
    chunk_size = checked_count(chunk_size, "chunk_size")
    for start in range(0, n, chunk_size):
        yield slice(start, min(start + chunk_size, n))
