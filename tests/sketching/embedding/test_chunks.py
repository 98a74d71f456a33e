"""Row chunks (botorch_sketch.sketching.embedding.chunks)."""

import pytest
from botorch.exceptions.errors import InputDataError

from botorch_sketch.sketching.embedding.chunks import row_chunks


def test_row_chunks_cover_the_rows():
    assert list(row_chunks(5, 2)) == [slice(0, 2), slice(2, 4), slice(4, 5)]
    assert list(row_chunks(0, 2)) == []


@pytest.mark.parametrize("chunk_size", [0, -3, 1.5, None])
def test_a_chunk_size_that_is_no_count_is_refused_by_name(chunk_size):
    # 0 failed in range() ("arg 3 must not be zero"); a negative size gave no
    # chunk at all: statistics of no rows, silently.
    with pytest.raises(InputDataError, match="chunk_size must be an integer"):
        list(row_chunks(5, chunk_size))
