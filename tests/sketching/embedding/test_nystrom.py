import pytest
import torch
from botorch.exceptions.errors import UnsupportedError
from gpytorch.kernels import MaternKernel, ProductKernel, RBFKernel, ScaleKernel
from helpers import rbf_kernel

from botorch_sketch.sketching import NystromEmbedding
from botorch_sketch.sketching.embedding import nystrom
from botorch_sketch.sketching.embedding.kernels import kernel_diagonal
from botorch_sketch.sketching.embedding.nystrom import (
    FEW_ROWS,
    TRIANGULAR_SOLVE_MIN_ROWS,
)


def test_embedding_reproduces_nystrom_approximation(tkwargs):
    torch.manual_seed(0)
    k = rbf_kernel(0.3, outputscale=1.7, frozen=False)
    S, X = torch.rand(15, 2, **tkwargs), torch.rand(40, 2, **tkwargs)
    emb = NystromEmbedding(k, S)
    with torch.no_grad():
        Z = emb(X)
        K_XS, K_SS = k(X, S).to_dense(), k(S).to_dense()
        expected = K_XS @ torch.linalg.solve(K_SS, K_XS.mT)
    assert emb.dim == 15
    torch.testing.assert_close(Z @ Z.mT, expected, rtol=1e-8, atol=1e-10)


def test_duplicates_shrink_the_embedding_but_not_the_approximation(tkwargs):
    torch.manual_seed(1)
    k = rbf_kernel(0.3, outputscale=1.7, frozen=False)
    S = torch.rand(10, 2, **tkwargs)
    X = torch.rand(30, 2, **tkwargs)
    emb = NystromEmbedding(k, torch.cat([S, S[:4]]))
    with torch.no_grad():
        Z, Z_ref = emb(X), NystromEmbedding(k, S)(X)
    assert emb.dim == 10
    torch.testing.assert_close(Z @ Z.mT, Z_ref @ Z_ref.mT, rtol=1e-8, atol=1e-10)


def test_residual_variance_is_zero_on_inducing_points_and_prior_far_away(tkwargs):
    k = rbf_kernel(0.1, outputscale=1.7, frozen=False)
    S = torch.linspace(0, 0.5, 8, **tkwargs).unsqueeze(-1)
    emb = NystromEmbedding(k, S)
    with torch.no_grad():
        on = emb.residual_variance(S)
        far = emb.residual_variance(torch.tensor([[5.0]], **tkwargs))
    assert on.abs().max() < 1e-8
    torch.testing.assert_close(far, torch.tensor([1.7], **tkwargs))


def test_extended_matches_a_fresh_embedding(tkwargs):
    torch.manual_seed(2)
    k = rbf_kernel(0.3, outputscale=1.7, frozen=False)
    S, X = torch.rand(12, 3, **tkwargs), torch.rand(25, 3, **tkwargs)
    with torch.no_grad():
        emb = NystromEmbedding(k, S[:6])
        for i in range(6, 12):
            emb = emb.extended(S[i])
        fresh = NystromEmbedding(k, S)
        Z, Zf = emb(X), fresh(X)
        # the old coordinates are kept, so the first 6 agree exactly
        torch.testing.assert_close(Z[:, :6], NystromEmbedding(k, S[:6])(X))
    torch.testing.assert_close(Z @ Z.mT, Zf @ Zf.mT, rtol=1e-8, atol=1e-10)


def test_extending_in_place_leaves_earlier_embeddings_as_they_were(tkwargs):
    # The grown root shares its buffer with the one it came from; a second
    # extension of an older embedding (a branch) must not write over it.
    torch.manual_seed(3)
    k = rbf_kernel(0.3, outputscale=1.7, frozen=False)
    S, X = torch.rand(8, 3, **tkwargs), torch.rand(20, 3, **tkwargs)
    with torch.no_grad():
        chain = [NystromEmbedding(k, S[:2])]
        for i in range(2, 8):
            chain.append(chain[-1].extended(S[i]))
        before = [emb(X) for emb in chain]
        branch = chain[3].extended(S[0] + 0.25)
        assert branch.root.data_ptr() != chain[4].root.data_ptr()
        for emb, Z in zip(chain, before, strict=True):
            torch.testing.assert_close(emb(X), Z, rtol=0, atol=0)
        fresh = NystromEmbedding(k, branch.inducing_points)
        Zb, Zf = branch(X), fresh(X)
    torch.testing.assert_close(Zb @ Zb.mT, Zf @ Zf.mT, rtol=1e-8, atol=1e-10)
    assert chain[-1].root.data_ptr() == chain[2].root.data_ptr()


def test_extended_refuses_a_point_in_the_span(tkwargs):
    k = rbf_kernel(0.3, outputscale=1.7, frozen=False)
    S = torch.rand(5, 2, **tkwargs)
    with torch.no_grad():
        emb = NystromEmbedding(k, S)
        assert emb.extended(S[2]) is None
        assert emb.extended(S[2] + 0.5) is not None


def test_new_coordinate_needs_an_extended_embedding(tkwargs):
    emb = NystromEmbedding(
        rbf_kernel(0.3, outputscale=1.7, frozen=False), torch.rand(5, 2, **tkwargs)
    )
    with pytest.raises(UnsupportedError, match="extended"):
        emb.new_coordinate(torch.rand(3, 2, **tkwargs), torch.rand(3, 5, **tkwargs))


def test_empty_inducing_set_embeds_into_zero_dimensions(tkwargs):
    emb = NystromEmbedding(
        rbf_kernel(0.3, outputscale=1.7, frozen=False), torch.empty(0, 2, **tkwargs)
    )
    Z = emb(torch.rand(7, 2, **tkwargs))
    assert Z.shape == (7, 0)
    torch.testing.assert_close(
        emb.residual_variance(torch.rand(3, 2, **tkwargs)).detach(),
        torch.full((3,), 1.7, **tkwargs),
    )


def test_gradient_is_finite_with_degenerate_inducing_spectrum(tkwargs):
    # Repeated inducing points give repeated zero eigenvalues, where the gradient
    # of eigh is infinite; the embedding must not inherit that.
    k = rbf_kernel(0.3, outputscale=1.7, frozen=False)
    S = torch.rand(6, 2, **tkwargs)
    emb = NystromEmbedding(k, torch.cat([S, S, S]))
    X = torch.rand(20, 2, **tkwargs)
    Z = emb(X)
    (Z @ Z.mT).sum().backward()
    grads = [p.grad for p in k.parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert any(g.abs().sum() > 0 for g in grads)


def test_gradient_matches_the_exact_nystrom_gradient(tkwargs):
    torch.manual_seed(3)
    k = rbf_kernel(0.3, outputscale=1.7, frozen=False)
    S, X = torch.rand(8, 2, **tkwargs), torch.rand(20, 2, **tkwargs)
    Z = NystromEmbedding(k, S)(X)
    (Z @ Z.mT).sum().backward()
    ours = [p.grad.clone() for p in k.parameters()]
    k.zero_grad()
    K_XS, K_SS = k(X, S).to_dense(), k(S).to_dense()
    (K_XS @ torch.linalg.solve(K_SS, K_XS.mT)).sum().backward()
    for a, p in zip(ours, k.parameters(), strict=True):
        torch.testing.assert_close(a, p.grad, rtol=1e-6, atol=1e-8)


def test_well_conditioned_sets_embed_by_a_triangular_solve_equal_to_the_root(
    tkwargs, monkeypatch
):
    # root = L^{-T}: on the CPU, from TRIANGULAR_SOLVE_MIN_ROWS rows (batches
    # together) one solve with L gives K root, gradients included; smaller
    # blocks use the product. The eigendecomposition's root and a grown root
    # have no L.
    k = rbf_kernel(0.3, outputscale=1.0, frozen=False)
    S = torch.rand(12, 2, generator=torch.Generator().manual_seed(0), **tkwargs)
    emb = NystromEmbedding(k, S)
    assert emb._lower is not None
    solves = []
    solve = torch.linalg.solve_triangular

    def counted(*args, **kwargs):
        solves.append(args[1].shape)
        return solve(*args, **kwargs)

    monkeypatch.setattr(torch.linalg, "solve_triangular", counted)
    many = (TRIANGULAR_SOLVE_MIN_ROWS + 1) // 2 + 1
    for shape in ((3, 7, 2), (2, many, 2)):
        X = torch.rand(*shape, generator=torch.Generator().manual_seed(1), **tkwargs)
        solves.clear()
        Z = emb(X)
        uses_solve = X.device.type == "cpu" and X[..., 0].numel() >= (
            TRIANGULAR_SOLVE_MIN_ROWS
        )
        # One solve over every row at once, not one per batch.
        assert solves == ([(emb.dim, 2 * many)] if uses_solve else [])
        expected = emb.kernel_rows(X) @ emb.root
        torch.testing.assert_close(Z, expected, rtol=0, atol=1e-12)
        (grad,) = torch.autograd.grad(
            Z.pow(2).sum(), k.base_kernel.raw_lengthscale, retain_graph=True
        )
        (grad_expected,) = torch.autograd.grad(
            expected.pow(2).sum(), k.base_kernel.raw_lengthscale, retain_graph=True
        )
        torch.testing.assert_close(grad, grad_expected, rtol=1e-10, atol=1e-12)
    duplicated = NystromEmbedding(k, torch.cat([S, S[:3]]))
    assert duplicated._lower is None
    grown = emb.extended(torch.tensor([[0.95, 0.05]], **tkwargs))
    assert grown is not None and grown._lower is None


@pytest.mark.parametrize("kind", ["rbf", "scaled-matern-ard", "product-active-dims"])
def test_rows_and_prior_of_few_inputs_come_from_one_kernel_call(
    tkwargs, monkeypatch, kind
):
    # Up to FEW_ROWS inputs, k(X, [S; X]) gives the rows and, on its diagonal,
    # k(x, x); beyond, two calls. Both equal the separate calls.
    if kind == "rbf":
        k = rbf_kernel(0.3, outputscale=None)
    elif kind == "scaled-matern-ard":
        k = ScaleKernel(MaternKernel(nu=1.5, ard_num_dims=3))
        k.base_kernel.lengthscale = torch.tensor([0.2, 0.5, 0.9])
        k.outputscale = 2.5
    else:
        k = ProductKernel(
            RBFKernel(active_dims=torch.tensor([0, 1])),
            MaternKernel(nu=0.5, active_dims=torch.tensor([2])),
        )
    k = k.to(**tkwargs).requires_grad_(False)
    g = torch.Generator().manual_seed(3)
    S = torch.rand(9, 3, generator=g, dtype=tkwargs["dtype"]).to(**tkwargs)
    calls = []
    real = nystrom.kernel_matrix

    def counted(*args, **kwargs):
        calls.append(args[1].shape[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(nystrom, "kernel_matrix", counted)
    for emb in (NystromEmbedding(k, S), NystromEmbedding(k, S[:0])):
        for n in (1, 10, FEW_ROWS, FEW_ROWS + 1):
            X = torch.rand(n, 3, generator=g, dtype=tkwargs["dtype"]).to(**tkwargs)
            calls.clear()
            rows, prior = emb.kernel_rows_and_prior(X)
            # One call for few inputs; for more, the rows' own call (none
            # when the set is empty) beside the diagonal's.
            few = n <= FEW_ROWS
            assert len(calls) == (1 if few else int(emb.num_inducing > 0))
            m = emb.num_inducing
            expected = real(k, X, S[:m]) if m else X.new_zeros(n, 0)
            torch.testing.assert_close(rows, expected)
            torch.testing.assert_close(
                prior, kernel_diagonal(k, X), rtol=1e-13, atol=1e-13
            )
