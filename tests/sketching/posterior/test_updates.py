import torch

from botorch_sketch.sketching.posterior.updates import bordered_inverse


def test_bordered_inverse_is_the_inverse_of_the_bordered_matrix(tkwargs):
    g = torch.Generator().manual_seed(0)
    A = torch.randn(6, 6, generator=g, **tkwargs)
    M = A @ A.mT + torch.eye(6, **tkwargs)
    inverse, u, schur = bordered_inverse(torch.linalg.inv(M[:5, :5]), M[:5, 5], M[5, 5])
    torch.testing.assert_close(inverse, torch.linalg.inv(M))
    torch.testing.assert_close(u, torch.linalg.solve(M[:5, :5], M[:5, 5]))
    torch.testing.assert_close(schur, 1 / torch.linalg.inv(M)[5, 5])


def test_bordered_inverse_grows_in_place_in_a_buffer(tkwargs):
    # The inverse as the top-left block of ``out``: written in place, same result.
    g = torch.Generator().manual_seed(1)
    A = torch.randn(6, 6, generator=g, **tkwargs)
    M = A @ A.mT + torch.eye(6, **tkwargs)
    buffer = torch.zeros(9, 9, **tkwargs)
    buffer[:5, :5] = torch.linalg.inv(M[:5, :5])
    out, _, _ = bordered_inverse(buffer[:5, :5], M[:5, 5], M[5, 5], buffer[:6, :6])
    assert out.data_ptr() == buffer.data_ptr()
    torch.testing.assert_close(buffer[:6, :6], torch.linalg.inv(M))
    assert not buffer[6:].any() and not buffer[:, 6:].any()
