import logging

import pytest
import torch
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.test_functions import Branin

pytest.importorskip("ax")

from ax.api.client import Client  # noqa: E402
from ax.api.configs import RangeParameterConfig  # noqa: E402

from botorch_sketch.acquisition import qLogNEIMarginalBaseline  # noqa: E402
from botorch_sketch.integrations import ax_carried  # noqa: E402
from botorch_sketch.integrations.ax import sketch_generation_strategy  # noqa: E402
from botorch_sketch.integrations.ax_carried import (  # noqa: E402
    CARRIED,
    CarriedNystromGP,
    forget,
)
from botorch_sketch.models.nystrom_gp import NystromGP  # noqa: E402
from botorch_sketch.sketching.rules import (  # noqa: E402
    GreedyVarianceSelector,
    RidgeLeverageSampler,
)

BRANIN = Branin()
FAST = {"num_restarts": 2, "raw_samples": 64}


@pytest.fixture(autouse=True)
def quiet_and_forgetful():
    logger = logging.getLogger("ax")
    level, threads = logger.level, torch.get_num_threads()
    logger.setLevel(logging.WARNING)
    torch.set_num_threads(1)
    forget()
    yield
    forget()
    logger.setLevel(level)
    torch.set_num_threads(threads)


@pytest.fixture
def fits(monkeypatch):
    # Every fit that actually runs (NystromGP's own custom_fit).
    calls = []
    original = NystromGP.custom_fit

    def counted(self, *args, **kwargs):
        calls.append(self.train_X.shape[0])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(NystromGP, "custom_fit", counted)
    return calls


def _client(carry, refit_growth, attached=20, max_inducing=None, **strategy):
    client = Client(random_seed=0)
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(name="x0", parameter_type="float", bounds=(-5, 10)),
            RangeParameterConfig(name="x1", parameter_type="float", bounds=(0, 15)),
        ]
    )
    client.configure_optimization(objective="-branin")
    g = torch.Generator().manual_seed(0)
    for u in torch.rand(attached, 2, generator=g, dtype=torch.double):
        p = {"x0": float(-5 + 15 * u[0]), "x1": float(15 * u[1])}
        index = client.attach_trial(p)
        client.complete_trial(index, raw_data={"branin": _branin(p)})
    options = {"carry": carry, "refit_growth": refit_growth}
    if max_inducing is not None:
        options["max_inducing"] = max_inducing
    client.set_generation_strategy(
        sketch_generation_strategy(
            model_class=CarriedNystromGP,
            model_options=options,
            optimizer_options=FAST,
            use_existing_trials=True,
            **strategy,
        )
    )
    return client


def _branin(p):
    return float(BRANIN(torch.tensor([[p["x0"], p["x1"]]], dtype=torch.double)))


def _trial(client):
    ((index, p),) = client.get_next_trials(max_trials=1).items()
    client.complete_trial(index, raw_data={"branin": _branin(p)})


def test_ax_refits_only_when_the_data_have_grown(fits):
    client = _client("study", refit_growth=0.2)
    for _ in range(6):  # 20 -> 25 observations
        _trial(client)
    # Fitted at 20 observations; 21-24 are within 20% and load the carried
    # hyperparameters; 25 is not.
    assert fits == [20, 25]
    assert CARRIED["study", ("branin",)].num_data == 25


def test_the_carried_hyperparameters_are_the_ones_loaded(fits):
    client = _client("study", refit_growth=1.0)
    _trial(client)
    state = CARRIED["study", ("branin",)].state
    _trial(client)
    assert fits == [20]
    model = client._generation_strategy.adapter.generator.surrogate.model
    assert isinstance(model, CarriedNystromGP) and model.train_X.shape[0] == 21
    for name, module_state in state.items():
        for key, value in module_state.items():
            torch.testing.assert_close(getattr(model, name).state_dict()[key], value)


def test_refit_growth_zero_refits_every_trial(fits):
    client = _client("always", refit_growth=0.0)
    for _ in range(3):
        _trial(client)
    assert fits == [20, 21, 22]


def test_a_mismatched_carried_state_is_refitted(fits):
    # A carried state of another structure (e.g. another search space) does
    # not load: the model fits instead.
    CARRIED["study", ("branin",)] = ax_carried.Carried(
        num_data=1000, state={"covar_module": {"bogus": torch.zeros(1)}}
    )
    client = _client("study", refit_growth=1.0)
    _trial(client)
    assert fits == [20]


def test_bad_options_are_refused():
    X, Y = torch.rand(10, 2, dtype=torch.double), torch.rand(10, 1).double()
    with pytest.raises(InputDataError, match="carry"):
        CarriedNystromGP(X, Y, carry="")
    with pytest.raises(InputDataError, match="refit_growth"):
        CarriedNystromGP(X, Y, carry="k", refit_growth=float("nan"))
    with pytest.raises(UnsupportedError, match="one outcome"):
        CarriedNystromGP(X, torch.rand(10, 2).double(), carry="k")


def test_carried_model_with_the_marginal_baseline(fits, monkeypatch):
    import ax.generators.torch.botorch_modular.acquisition as ax_acquisition

    acqfs = []
    original = ax_acquisition.optimize_acqf

    def spy(*args, **kwargs):
        acqfs.append(kwargs["acq_function"])
        return original(*args, **kwargs)

    monkeypatch.setattr(ax_acquisition, "optimize_acqf", spy)
    client = _client(
        "study",
        refit_growth=1.0,
        attached=40,
        botorch_acqf_class=qLogNEIMarginalBaseline,
        botorch_acqf_options={"baseline_max_size": 4},
    )
    for _ in range(3):
        _trial(client)
    assert fits == [40]
    assert len(acqfs) == 3
    assert all(type(a) is qLogNEIMarginalBaseline for a in acqfs)
    assert all(a.marginal_baseline and a.X_baseline.shape[0] <= 4 for a in acqfs)
    for trial in client._experiment.trials.values():
        p = trial.arm.parameters
        assert -5 <= p["x0"] <= 10 and 0 <= p["x1"] <= 15


def test_max_inducing_caps_the_default_rule():
    X = torch.rand(
        30, 2, dtype=torch.double, generator=torch.Generator().manual_seed(1)
    )
    Y = X.sum(-1, keepdim=True)
    model = CarriedNystromGP(X, Y, carry="k", max_inducing=8)
    assert isinstance(model.inducing_rule, RidgeLeverageSampler)
    assert model.inducing_rule.max_size == 8 and model.max_inducing == 8
    # By default 384 with the default rule, none with another or when lifted.
    default = CarriedNystromGP(X, Y, carry="k")
    assert default.max_inducing == ax_carried.DEFAULT_MAX_INDUCING == 384
    assert default.inducing_rule.max_size == 384
    lifted = CarriedNystromGP(X, Y, carry="k", max_inducing=None)
    assert lifted.max_inducing is None and lifted.inducing_rule.max_size == 1024
    rule = GreedyVarianceSelector(4)
    assert CarriedNystromGP(X, Y, carry="k", inducing=rule).max_inducing is None
    with pytest.raises(InputDataError, match="max_inducing"):
        CarriedNystromGP(X, Y, carry="k", max_inducing=0)
    with pytest.raises(InputDataError, match="max_inducing"):
        CarriedNystromGP(X, Y, carry="k", max_inducing=2.5)
    with pytest.raises(InputDataError, match="own cap"):
        CarriedNystromGP(
            X, Y, carry="k", max_inducing=8, inducing=GreedyVarianceSelector(4)
        )


def test_ax_passes_max_inducing_and_the_warm_rule_starts_from_the_last_set(
    fits, monkeypatch
):
    starts = []
    original = RidgeLeverageSampler.select

    def spy(self, candidates, size=None, *, current=None, forced=None):
        starts.append(None if current is None else current.numel())
        return original(self, candidates, size, current=current, forced=forced)

    monkeypatch.setattr(RidgeLeverageSampler, "select", spy)
    monkeypatch.setattr(CarriedNystromGP, "exact_fit_size", None)
    monkeypatch.setattr(CarriedNystromGP, "exact_fraction", None)
    client = _client("capped", refit_growth=1.0, max_inducing=6)
    _trial(client)
    carried = CARRIED["capped", ("branin",)]
    assert not carried.exact and carried.inducing is not None
    first = carried.inducing.clone()
    starts.clear()
    _trial(client)
    assert fits == [20]
    model = client._generation_strategy.adapter.generator.surrogate.model
    assert model.max_inducing == 6 and model.inducing_rule.max_size == 6
    # One resampling from the carried set (all of it still in the data).
    assert starts == [first.shape[0]]
    torch.testing.assert_close(carried.inducing, model.train_X[model.inducing_index])


def test_a_fit_in_the_exact_regime_carries_every_input_without_the_rule(
    fits, monkeypatch
):
    calls = []
    original = RidgeLeverageSampler.select

    def spy(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    client = _client("exact", refit_growth=1.0)
    _trial(client)
    assert CARRIED["exact", ("branin",)].exact
    monkeypatch.setattr(RidgeLeverageSampler, "select", spy)
    _trial(client)
    assert fits == [20] and calls == []
    model = client._generation_strategy.adapter.generator.surrogate.model
    assert model.is_exact and model.inducing_points.shape[0] == 21
