#!/usr/bin/env python3

import torch
from helpers import rbf_kernel, residual_data

from botorch_sketch.sketching.embedding.nystrom import NystromEmbedding
from botorch_sketch.sketching.posterior.embedded import EmbeddedPoints


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


def test_the_point_by_point_layout_holds_the_same_embedding(tkwargs):
    # ``by_point=True`` (the lazy UCB step's gathers) stores rows by point; every
    # operation must give what the column-major store gives, and keep rows
    # contiguous past the coordinate capacity and through appends.
    k = rbf_kernel(0.3)
    X, _, _ = residual_data(60, d=2, seed=3, **tkwargs)
    emb = NystromEmbedding(k, X[:3])
    stores = [EmbeddedPoints(emb, X[:40], by_point=b) for b in (False, True)]
    for grown in _grown(emb, X[40:], 6):
        c = [s.add_coordinate(grown) for s in stores]
        torch.testing.assert_close(c[0], c[1])
        emb = grown
    for i in range(40, 45):
        x = X[i : i + 1]
        for s in stores:
            s.append(x, emb(x), k(x, diag=True))
    column, row = stores
    assert row.Z.stride(-1) == 1 and column.Z.stride(0) == 1
    assert row.num_points == 45 and row.dim == 9
    torch.testing.assert_close(row.Z, column.Z)
    torch.testing.assert_close(row.residual, column.residual)
    M = torch.randn(row.dim, 3, **tkwargs)
    torch.testing.assert_close(row.product(M), column.Z @ M)
    torch.testing.assert_close(column.product(M), column.Z @ M)
    bigger = NystromEmbedding(k, X[:20])
    for s in stores:
        s.reembed(bigger)
    assert row.Z.stride(-1) == 1
    torch.testing.assert_close(row.Z, bigger(X[:45]))
    torch.testing.assert_close(row.Z, column.Z)


def test_embedded_points_follow_a_growing_inducing_set(tkwargs):
    # Appending points and adding coordinates keeps the store equal to a fresh
    # embedding of every point in the grown set, residual variances included.
    k = rbf_kernel(0.4, outputscale=1.3)
    X, _, _ = residual_data(30, **tkwargs)
    emb = NystromEmbedding(k, X[:3])
    points = EmbeddedPoints.empty(emb, X[:0], capacity=2)
    for i in range(30):
        x = X[i : i + 1]
        points.append(x, emb(x), k(x, diag=True))
        if i in (5, 11, 20):
            grown = emb.extended(X[i])
            assert grown is not None
            points.add_coordinate(grown)
            emb = grown
    assert points.num_points == 30 and points.dim == 6
    fresh = NystromEmbedding(k, emb.inducing_points)
    Zf = fresh(X)
    torch.testing.assert_close(points.Z @ points.Z.mT, Zf @ Zf.mT)
    torch.testing.assert_close(points.residual, fresh.residual_variance(X, Zf))
    points.reembed(fresh)
    torch.testing.assert_close(points.Z, Zf)
