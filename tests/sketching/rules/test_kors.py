import pytest
import torch
from botorch.exceptions.errors import InputDataError
from helpers import rbf_kernel

from botorch_sketch.sketching.rules.kors import KORS, theoretical_gamma


def _eq41(K, weights, mu, eps):
    # Eq. (41) literally: the new point is the last row of K with weight one.
    S = torch.diag(torch.cat([weights, weights.new_ones(1)]))
    m1 = K.shape[0]
    A = S @ K @ S + mu * torch.eye(m1, dtype=K.dtype)
    kcol = K[:, -1]
    quad = kcol @ S @ torch.linalg.solve(A, S @ kcol)
    return (1 + eps) / mu * (K[-1, -1] - quad)


def test_leverage_matches_equation_41_densely(tkwargs):
    g = torch.Generator().manual_seed(0)
    k = rbf_kernel(0.3)
    mu, eps = 0.7, 0.5
    rule = KORS(mu=mu, epsilon=eps, gamma=3.0)
    X = torch.rand(12, 2, generator=g, **tkwargs)
    probs = 0.2 + 0.8 * torch.rand(12, generator=g, **tkwargs)
    for i in range(12):
        x = X[i : i + 1]
        if i:
            K = k(torch.cat([X[:i], x])).to_dense()
            expected = _eq41(K, probs[:i].rsqrt(), mu, eps)
            k_Zs = K[-1, :-1]
        else:
            K = k(x).to_dense()
            expected = (1 + eps) / mu * (K[0, 0] - K[0, 0] ** 2 / (K[0, 0] + mu))
            k_Zs = x.new_zeros(0)
        tau = rule.leverage(k_Zs.reshape(1, -1), K[-1, -1].reshape(1))
        assert torch.allclose(tau, expected.reshape(1), rtol=1e-10, atol=1e-13)
        p = rule.probability(tau)
        assert torch.allclose(p, (3.0 * expected).clamp(max=1).reshape(1))
        rule.admit(k_Zs, K[-1, -1], probs[i])
    # The bordered inverse equals a direct one.
    before = rule.inverse.clone()
    rule.refactorise(k(X).to_dense())
    assert torch.allclose(before, rule.inverse, rtol=1e-9, atol=1e-12)


def test_redundant_points_have_small_leverage(tkwargs):
    # Unlike the authors' code variant, the score falls for a repeated point.
    k = rbf_kernel(0.3)
    rule = KORS(mu=0.1)
    x = torch.tensor([[0.3, 0.4]], **tkwargs)
    kss = k(x, diag=True)
    fresh = rule.leverage(torch.zeros(1, 0, **tkwargs), kss)
    rule.admit(torch.zeros(0, **tkwargs), kss[0], torch.tensor(1.0, **tkwargs))
    kzs = k(x, x).to_dense()
    again = rule.leverage(kzs, kss)
    # Exact ridge leverage of a second copy: 1 / (2 + mu), about half.
    assert float(again) < 0.6 * float(fresh)
    assert float(again) == pytest.approx(1.5 * (1 / 11) / (1 / 11 + 0.1))
    # The code's variant, (1 + eps)(k / mu - v / (v + mu)), would be ~20x larger.
    variant = 1.5 * (1 / 0.1 - float(again) / 1.5)
    assert variant > 10 * float(again)


def test_draws_are_reproducible_and_validated(tkwargs):
    k_Zs = torch.zeros(0, **tkwargs)
    kss = torch.ones((), **tkwargs)
    draws = []
    for _ in range(2):
        rule = KORS(mu=1.0, gamma=0.5, generator=torch.Generator().manual_seed(3))
        tau = rule.leverage(k_Zs.reshape(1, -1), kss.reshape(1))
        draws.append([bool(rule.consider(tau)[0]) for _ in range(50)])
    assert draws[0] == draws[1]
    # p = 0.5 * 1.5 * 1 / 2 = 0.375: some coins up, some down.
    assert 5 < sum(draws[0]) < 35
    with pytest.raises(InputDataError):
        KORS(mu=0.0)
    with pytest.raises(InputDataError):
        theoretical_gamma(0)
    assert theoretical_gamma(1000, 0.1) == pytest.approx(
        12 * torch.log(torch.tensor(1e4)).item()
    )
