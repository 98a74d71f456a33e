import pytest
import torch

optuna = pytest.importorskip("optuna")

from botorch.acquisition.analytic import (  # noqa: E402
    LogConstrainedExpectedImprovement,
    LogExpectedImprovement,
)
from botorch.exceptions.errors import UnsupportedError  # noqa: E402
from botorch.models import ModelListGP, SingleTaskGP  # noqa: E402
from botorch.models.transforms.input import Normalize  # noqa: E402
from botorch.models.transforms.outcome import Log  # noqa: E402
from optuna_helpers import FAST  # noqa: E402

from botorch_sketch.integrations.optuna import SketchSampler  # noqa: E402
from botorch_sketch.integrations.optuna.marginal import _Marginals  # noqa: E402
from botorch_sketch.models import NystromGP  # noqa: E402

D = 4


def _data(n=150, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, D, generator=g, dtype=torch.float64)
    Y = torch.cos(5 * X).sum(-1, keepdim=True)
    failed = (X[:, :2].sum(-1, keepdim=True) > 1.3).to(X) - 0.5
    return X, Y, failed


def _nystrom(X, Y, **kwargs):
    # 30 inducing points of 150: the DTC regime, as the sampler's at large N.
    model = NystromGP(X, Y, inducing=X[:30], **kwargs)
    model.warn_exact_regime = False
    return model.eval()


@pytest.fixture(scope="module")
def models():
    X, Y, failed = _data()
    return _nystrom(X, Y), _nystrom(X, failed)


def test_marginals_are_the_model_lists_posterior_at_single_points(models):
    marginals = _Marginals.of(models)
    assert marginals is not None and marginals.num_outputs == 2
    X = torch.rand(9, 1, D, generator=torch.Generator().manual_seed(3)).double()
    ours, theirs = marginals.posterior(X), ModelListGP(*models).posterior(X)
    assert ours.mean.shape == theirs.mean.shape == torch.Size([9, 1, 2])
    torch.testing.assert_close(ours.mean, theirs.mean, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(ours.variance, theirs.variance, rtol=1e-9, atol=1e-12)


def test_the_constrained_acquisition_and_its_gradient_are_unchanged(models):
    kwargs = {"best_f": 0.4, "objective_index": 0, "constraints": {1: (None, 0.0)}}
    ours = LogConstrainedExpectedImprovement(model=_Marginals.of(models), **kwargs)
    theirs = LogConstrainedExpectedImprovement(model=ModelListGP(*models), **kwargs)
    X = torch.rand(6, 1, D, generator=torch.Generator().manual_seed(4)).double()
    values, gradients = [], []
    for acqf in (ours, theirs):
        x = X.clone().requires_grad_(True)
        value = acqf(x)
        (gradient,) = torch.autograd.grad(value.sum(), x)
        values.append(value)
        gradients.append(gradient)
    torch.testing.assert_close(values[0], values[1], rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(gradients[0], gradients[1], rtol=1e-7, atol=1e-9)
    # LogEI of the objective alone, likewise.
    ei = LogExpectedImprovement(model=_Marginals.of(models[:1]), best_f=0.4)
    torch.testing.assert_close(
        ei(X),
        LogExpectedImprovement(model=models[0], best_f=0.4)(X),
        rtol=1e-9,
        atol=1e-9,
    )


def test_the_acquisitions_device_move_does_not_walk_the_models(models):
    # BoTorch's analytic acquisitions call ``self.to(X)`` at every evaluation.
    marginals = _Marginals.of(models)
    assert list(marginals.modules()) == [marginals]


def test_marginals_refuse_models_whose_read_out_does_not_apply():
    X, Y, _ = _data()
    assert _Marginals.of([SingleTaskGP(X, Y)]) is None
    assert _Marginals.of([_nystrom(X, Y, input_transform=Normalize(D))]) is None
    assert _Marginals.of([_nystrom(X, Y + 5.0, outcome_transform=Log())]) is None
    plain = _nystrom(X, Y)
    fantasy = plain.condition_on_observations(
        torch.rand(2, 1, D, dtype=torch.float64),
        torch.rand(3, 2, 1, 1, dtype=torch.float64),
    )
    assert _Marginals.of([plain, fantasy]) is None


def test_marginals_refuse_joint_and_noisy_posteriors(models):
    marginals = _Marginals.of(models)
    with pytest.raises(UnsupportedError, match="q = 1"):
        marginals.posterior(torch.rand(3, 2, D, dtype=torch.float64))
    with pytest.raises(UnsupportedError, match="observation_noise"):
        marginals.posterior(
            torch.rand(3, 1, D, dtype=torch.float64), observation_noise=True
        )


def _failing(trial):
    x = trial.suggest_float("x", 0.0, 1.0)
    y = trial.suggest_float("y", 0.0, 1.0)
    c = trial.suggest_categorical("c", ["a", "b", "c"])
    if x + y > 1.4:
        raise RuntimeError("fails")
    return -((x - 0.6) ** 2) - (y - 0.7) ** 2 + 0.1 * "abc".index(c)


def test_the_sampler_reads_its_nystrom_models_marginals(acqf_calls):
    sampler = SketchSampler(seed=0, n_startup_trials=8, **FAST)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.optimize(_failing, n_trials=14, catch=(RuntimeError,))
    seen = [acq for acq, _ in acqf_calls]
    assert any(t.state == optuna.trial.TrialState.FAIL for t in study.trials)
    assert seen and all(
        isinstance(a, (LogExpectedImprovement, LogConstrainedExpectedImprovement))
        for a in seen
    )
    # Both acquisitions, each on the models' read-out.
    assert {type(a) for a in seen} == {
        LogExpectedImprovement,
        LogConstrainedExpectedImprovement,
    }
    assert all(isinstance(a.model, _Marginals) for a in seen)
