r"""Matrices grown by a row and a column inside spare room."""

import torch

from botorch_sketch.sketching.embedding.growing import grown_block


def test_the_newest_block_grows_in_place_and_older_views_keep_their_values():
    A = torch.arange(4.0, dtype=torch.double).reshape(2, 2)
    first, store = grown_block(A, None, 3, 3)
    assert torch.equal(first[:2, :2], A)
    assert not first[2].any() and not first[:, 2].any()
    first[2, 2] = 7.0
    second, same = grown_block(first, store, 4, 4)
    # In place: the same buffer, nothing copied, the earlier view unchanged.
    assert same is store and second.data_ptr() == first.data_ptr()
    second[3, :] = 1.0
    expected = torch.tensor([[0.0, 1, 0], [2, 3, 0], [0, 0, 7]], dtype=torch.double)
    assert torch.equal(first, expected)
    assert torch.equal(second[:3, :3], first)


def test_growing_an_older_block_again_copies_it():
    A = torch.ones(2, 2, dtype=torch.double)
    first, store = grown_block(A, None, 3, 3)
    second, _ = grown_block(first, store, 4, 4)
    second[3, 3] = 5.0
    # ``first`` is no longer the newest block: growing it must not write over
    # the row and column ``second`` owns.
    branch, other = grown_block(first, store, 4, 4)
    assert other is not store and branch.data_ptr() != second.data_ptr()
    assert branch[3, 3] == 0 and second[3, 3] == 5.0


def test_a_full_buffer_is_replaced_by_a_larger_one():
    block, store = grown_block(torch.zeros(0, 0, dtype=torch.double), None, 1, 1)
    buffers = {store.buffer.data_ptr()}
    for size in range(2, 200):
        block[-1, -1] = size
        block, store = grown_block(block, store, size, size)
        buffers.add(store.buffer.data_ptr())
    # Room for half as many again each time: a handful of buffers, not 200.
    assert len(buffers) <= 8
    assert torch.equal(block.diagonal()[:-1], torch.arange(2.0, 200).double())
