#!/usr/bin/env python3

import torch
from helpers import rbf_kernel, residual_data

from botorch_sketch.sketching.embedded import EmbeddedPoints
from botorch_sketch.sketching.nystrom import NystromEmbedding


def _grown(emb: NystromEmbedding, X: torch.Tensor, times: int) -> list:
    # Embeddings grown one point at a time by the rows of X that add a direction.
    out = []
    for x in X:
        grown = emb.extended(x)
        if grown is not None:
            out.append(grown)
            emb = grown
        if len(out) == times:
            break
    assert len(out) == times
    return out


def test_points_embedded_at_once_gain_coordinates_past_their_capacity(tkwargs):
    # A store built on all points at once holds one spare coordinate at most:
    # the first new coordinate and every doubling after it copy the buffer.
    k = rbf_kernel(0.3, outputscale=1.3)
    X, _, _ = residual_data(40, d=2, **tkwargs)
    emb = NystromEmbedding(k, X[:2])
    points = EmbeddedPoints(emb, X, chunk_size=7)
    for grown in _grown(emb, X[2:], 9):
        c = points.add_coordinate(grown)
        emb = grown
        torch.testing.assert_close(c, points.Z[:, -1])
    fresh = NystromEmbedding(k, emb.inducing_points)
    Zf = fresh(X)
    assert points.dim == 11
    torch.testing.assert_close(points.Z @ points.Z.mT, Zf @ Zf.mT)
    torch.testing.assert_close(points.residual, fresh.residual_variance(X, Zf))


def test_rows_and_coordinates_grow_together(tkwargs):
    # Appending past the row capacity and adding coordinates past the column
    # capacity, interleaved, keeps every earlier value.
    k = rbf_kernel(0.3)
    X, _, _ = residual_data(50, d=2, seed=1, **tkwargs)
    emb = NystromEmbedding(k, X[:1])
    points = EmbeddedPoints.empty(emb, X[:0], capacity=3)
    growth = iter(_grown(emb, X[25:], 10))
    for i in range(25):
        x = X[i : i + 1]
        points.append(x, emb(x), k(x, diag=True))
        if i % 2 == 1 and i < 20:
            emb = next(growth)
            points.add_coordinate(emb)
    Zf = NystromEmbedding(k, emb.inducing_points)(X[:25])
    assert points.num_points == 25 and points.dim == 11
    torch.testing.assert_close(points.Z @ points.Z.mT, Zf @ Zf.mT)
    torch.testing.assert_close(points.prior_variance, k(X[:25], diag=True))


def test_the_embedding_is_held_column_major(tkwargs):
    # The online loops' per-step ``Z @ P`` runs as a column sweep only on this
    # layout (up to 2.7x faster at 10^5 arms on some CPUs, see the module
    # docstring); a reembed or a new coordinate must keep it.
    k = rbf_kernel(0.3)
    X, _, _ = residual_data(30, d=2, **tkwargs)
    emb = NystromEmbedding(k, X[:4])
    points = EmbeddedPoints(emb, X)
    assert points.Z.stride(0) == 1
    points.add_coordinate(_grown(emb, X[4:], 1)[0])
    assert points.Z.stride(0) == 1 and points.dim == 5
    points.reembed(NystromEmbedding(k, X[:12]))
    assert points.Z.stride(0) == 1 and points.dim == 12
    torch.testing.assert_close(points.Z, NystromEmbedding(k, X[:12])(X))


def test_a_store_built_on_no_points_takes_appends(tkwargs):
    k = rbf_kernel(0.3)
    X, _, _ = residual_data(5, d=2, **tkwargs)
    emb = NystromEmbedding(k, X[:2])
    points = EmbeddedPoints(emb, X[:0])
    for i in range(5):
        x = X[i : i + 1]
        points.append(x, emb(x), k(x, diag=True))
    torch.testing.assert_close(points.Z, emb(X))
    torch.testing.assert_close(points.residual, emb.residual_variance(X))
