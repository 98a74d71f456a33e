import math

import torch
from botorch.models import SingleTaskGP

from benchmarks.inference import Row, render
from benchmarks.metrics import (
    TorchCallCounter,
    effective_dimension,
    held_out_accuracy,
    stopwatch,
)


def _model():
    g = torch.Generator().manual_seed(0)
    X = torch.rand(30, 2, generator=g, dtype=torch.double)
    Y = X.sum(-1, keepdim=True).sin() + 0.1 * torch.randn(30, 1, generator=g).double()
    model = SingleTaskGP(X, Y)
    model.covar_module.lengthscale = 0.4
    model.likelihood.noise = 0.05
    return model.eval(), X, Y


def test_held_out_accuracy_is_the_gaussian_predictive_density():
    model, X, Y = _model()
    Xt, Yt = X[:7] + 0.01, Y[:7]
    acc = held_out_accuracy(model, Xt, Yt)
    post = model.posterior(Xt, observation_noise=True)
    mean, sd = post.mean.squeeze(-1), post.variance.sqrt().squeeze(-1)
    nll = -torch.distributions.Normal(mean, sd).log_prob(Yt.squeeze(-1)).mean()
    assert math.isclose(acc.nll, float(nll), rel_tol=1e-9)
    assert math.isclose(acc.rmse, float((mean - Yt.squeeze(-1)).pow(2).mean().sqrt()))


def test_effective_dimension_is_the_trace_formula():
    model, X, _ = _model()
    with torch.no_grad():
        K = model.covar_module(
            model.input_transform(X) if hasattr(model, "input_transform") else X
        ).to_dense()
        lam = model.likelihood.noise.item()
        expected = torch.trace(K @ torch.linalg.inv(K + lam * torch.eye(30)))
    assert math.isclose(effective_dimension(model, X), float(expected), rel_tol=1e-6)


def test_render_reports_ratios_against_the_exact_gp():
    rows = [
        Row("frontier", "SingleTaskGP", 100, None, 10.0, 0.30, 0.3),
        Row("frontier", "NystromGP greedy-variance", 100, 20, 2.0, 0.35, 0.31),
        Row("growth", "NystromGP greedy-variance", 100, 20, 1.0, 0.35, 0.31),
        Row("growth", "NystromGP greedy-variance", 1000, 20, 9.0, 0.33, 0.30),
    ]
    text = render(rows, {"frontier": 12.3}, "test machine")
    assert "| NystromGP greedy-variance | 100 | 20 | 5.0x | +0.050 |" in text
    assert "n 100->1000: 9.0x time for 10x data" in text
    assert "frontier: 12" in text and "test machine" in text


def test_stopwatch_freezes_on_exit():
    with stopwatch() as elapsed:
        sum(range(1000))
    first = elapsed()
    assert first >= 0 and elapsed() == first


def test_torch_call_counter_counts_calls_not_attribute_reads():
    x = torch.ones(3)
    counter = TorchCallCounter()
    with counter:
        y = torch.add(x, 1)
        y.sum()
        _ = y.shape, y.dtype
    assert counter.calls == 2
    with counter:  # blocks add up; calls outside are not counted
        torch.mul(x, 2)
    x.sum()
    assert counter.calls == 3
