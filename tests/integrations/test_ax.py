import logging
import os
import subprocess
import sys

import pytest
import torch
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.acquisition.multi_objective.logei import (
    qLogNoisyExpectedHypervolumeImprovement,
)
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.models import ModelListGP, SingleTaskGP
from botorch.test_functions import Branin
from botorch.test_functions.multi_objective import BraninCurrin

pytest.importorskip("ax")

import ax.generators.torch.botorch_modular.acquisition as ax_acquisition  # noqa: E402
from ax.api.client import Client  # noqa: E402
from ax.api.configs import RangeParameterConfig  # noqa: E402
from ax.generators.torch.botorch_modular.utils import use_model_list  # noqa: E402

from botorch_sketch.acquisition import (  # noqa: E402
    BKBUpperConfidenceBound,
    bkb_beta,
    marginal_baseline,
    qBKBUpperConfidenceBound,
    qLogNEIMarginalBaseline,
)
from botorch_sketch.integrations.ax import (  # noqa: E402
    default_generation_strategy,
    sketch_generation_strategy,
)
from botorch_sketch.models import GradientSubsetGP, NystromGP  # noqa: E402

# More model classes of this package join this list.
# Each class with model options that make it differ from an exact GP at 30 trials.
MODEL_CLASSES = [
    (NystromGP, None),
    (GradientSubsetGP, {"subset_size": 16, "num_initial": 8}),
]
FAST = {"num_restarts": 2, "raw_samples": 64}
BRANIN = Branin()


@pytest.fixture(autouse=True)
def quiet_ax_one_thread():
    # Small models: one thread is many times faster than two on a busy machine.
    logger = logging.getLogger("ax")
    level, threads = logger.level, torch.get_num_threads()
    logger.setLevel(logging.WARNING)
    torch.set_num_threads(1)
    yield
    logger.setLevel(level)
    torch.set_num_threads(threads)


@pytest.fixture
def optimize_calls(monkeypatch):
    # The keyword arguments of every optimize_acqf call Ax makes.
    calls = []
    original = ax_acquisition.optimize_acqf

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(ax_acquisition, "optimize_acqf", spy)
    return calls


def branin_client(generation_strategy, seed=0):
    client = Client(random_seed=seed)
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(name="x0", parameter_type="float", bounds=(-5, 10)),
            RangeParameterConfig(name="x1", parameter_type="float", bounds=(0, 15)),
        ]
    )
    client.configure_optimization(objective="-branin")
    client.set_generation_strategy(generation_strategy=generation_strategy)
    return client


def branin(p):
    return float(BRANIN(torch.tensor([[p["x0"], p["x1"]]], dtype=torch.double)))


def run_trials(client, n, batch=1):
    values = {}
    while len(values) < n:
        trials = client.get_next_trials(max_trials=min(batch, n - len(values)))
        assert trials, "the generation strategy proposed no trial"
        for index, p in trials.items():
            values[index] = branin(p)
            client.complete_trial(trial_index=index, raw_data={"branin": values[index]})
    return values


def surrogate_model(client):
    return client._generation_strategy.adapter.generator.surrogate.model


@pytest.mark.slow
def test_importing_the_package_does_not_import_ax_and_error_names_the_extra():
    code = (
        "import sys, botorch_sketch, botorch_sketch.integrations\n"
        "import botorch_sketch.cli\n"
        "import botorch_sketch.tune, benchmarks.tuning\n"
        "assert 'ax' not in sys.modules, 'importing botorch_sketch imported ax'\n"
        "sys.modules['ax'] = None\n"
        "try:\n"
        "    import botorch_sketch.integrations.ax\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr
    assert 'pip install -e ".[ax]"' in out.stdout


@pytest.mark.slow
@pytest.mark.parametrize(("model_class", "model_options"), MODEL_CLASSES)
def test_client_experiment_uses_our_model_and_beats_sobol(
    model_class, model_options, tmp_path
):
    gs = sketch_generation_strategy(
        model_class,
        model_options=model_options,
        num_initial=8,
        optimizer_options=FAST,
        seed=0,
    )
    client = branin_client(gs)
    values = run_trials(client, 30)
    model = surrogate_model(client)
    assert type(model) is model_class
    surrogate = client._generation_strategy.adapter.generator.surrogate
    assert surrogate.training_data[0].X.shape[0] == 29  # before the last trial
    if model_class is GradientSubsetGP:
        # Fitted on 16 of the 29, the 8 Sobol points and the newest among them.
        assert model.train_inputs[0].shape[-2] == 16
        assert set(range(8)) | {28} <= set(model.subset_indices.tolist())
    statuses = {t.status.name for t in client._experiment.trials.values()}
    assert statuses == {"COMPLETED"} and len(client._experiment.trials) == 30

    # Sobol-only with the same seed and budget.
    sobol = branin_client(default_generation_strategy(num_initial=30, seed=0))
    sobol_best = min(run_trials(sobol, 30).values())
    ours_best = min(values.values())
    assert ours_best < sobol_best
    assert ours_best < 0.398 + 0.3  # Branin's minimum is 0.397887

    # Cross-validates the model, and names one of the completed trials.
    params, prediction, index, _ = client.get_best_parameterization()
    assert index in values
    assert values[index] <= sorted(values.values())[5]
    assert branin(params) == pytest.approx(values[index])

    # A saved client loads and continues with the same model.
    path = tmp_path / "client.json"
    client.save_to_json_file(str(path))
    loaded = Client.load_from_json_file(str(path))
    (index,) = loaded.get_next_trials(max_trials=1)
    assert index == 30
    assert type(surrogate_model(loaded)) is model_class


@pytest.mark.slow
@pytest.mark.parametrize(
    "acqf_class, batch", [(BKBUpperConfidenceBound, 1), (qBKBUpperConfidenceBound, 2)]
)
def test_bkb_acquisition_named_by_class(acqf_class, batch, optimize_calls):
    gs = sketch_generation_strategy(
        num_initial=6,
        botorch_acqf_class=acqf_class,
        botorch_acqf_options={"rkhs_norm": 0.5, "form": "authors"},
        optimizer_options=FAST,
        seed=1,
    )
    client = branin_client(gs)
    values = run_trials(client, 12, batch=batch)
    assert len(values) == 12
    # Ax makes one single-arm trial per call, the others of a batch pending.
    assert len(optimize_calls) == 12 - 6
    acqf = optimize_calls[-1]["acq_function"]
    pending = [getattr(c["acq_function"], "X_pending", None) for c in optimize_calls]
    assert any(x is not None and x.shape[-2] == 1 for x in pending) == (batch > 1)
    assert type(acqf) is acqf_class
    model = surrogate_model(client)
    assert isinstance(model, NystromGP)
    # The options reached the input constructor: beta is BKB's for them.
    expected = bkb_beta(model, form="authors", rkhs_norm=0.5)
    assert float(acqf.beta) == pytest.approx(expected)
    assert expected != pytest.approx(bkb_beta(model))
    # Ax minimises -branin through a posterior transform with weight -1.
    assert acqf.posterior_transform is not None
    assert float(acqf.posterior_transform.weights) == -1.0


def test_marginal_baseline_option_runs_in_bounds_and_saves(optimize_calls, tmp_path):
    gs = sketch_generation_strategy(
        num_initial=6,
        botorch_acqf_class=qLogNEIMarginalBaseline,
        botorch_acqf_options={"baseline_k": 1.0, "baseline_max_size": 3},
        optimizer_options=FAST,
        seed=0,
    )
    client = branin_client(gs)
    run_trials(client, 10)
    assert len(optimize_calls) == 4
    acqf = optimize_calls[-1]["acq_function"]
    assert type(acqf) is qLogNEIMarginalBaseline and acqf.marginal_baseline
    # The options reached it, and its baseline is the rule's on Ax's data, for
    # the minimised outcome (Ax's posterior transform of weight -1).
    assert (acqf.baseline_k, acqf.baseline_max_size) == (1.0, 3)
    model = surrogate_model(client)
    X = client._generation_strategy.adapter.generator.surrogate.Xs[0]
    expected = marginal_baseline(
        model, X, k=1.0, max_size=3, posterior_transform=acqf.posterior_transform
    )

    # The same rows; their order follows near-tied scores, which the model
    # read back here need not reproduce to the last bit.
    def rows(X):
        return sorted(map(tuple, X.tolist()))

    assert rows(acqf.X_baseline) == rows(expected)
    trials = client._experiment.trials.values()
    for trial in trials:
        p = trial.arm.parameters
        assert -5 <= p["x0"] <= 10 and 0 <= p["x1"] <= 15
    # A saved client loads and continues with the option.
    path = tmp_path / "client.json"
    client.save_to_json_file(str(path))
    loaded = Client.load_from_json_file(str(path))
    assert list(loaded.get_next_trials(max_trials=1)) == [10]
    acqf = optimize_calls[-1]["acq_function"]
    assert type(acqf) is qLogNEIMarginalBaseline and acqf.baseline_max_size == 3


def test_without_the_option_ax_keeps_its_own_acquisition(optimize_calls):
    run_trials(
        branin_client(
            sketch_generation_strategy(num_initial=4, optimizer_options=FAST)
        ),
        5,
    )
    acqf = optimize_calls[-1]["acq_function"]
    assert type(acqf) is qLogNoisyExpectedImprovement
    assert acqf.prune_baseline


def test_optimizer_options_reach_optimize_acqf(optimize_calls):
    gs = sketch_generation_strategy(
        num_initial=4, optimizer_options={"num_restarts": 3, "raw_samples": 32}
    )
    run_trials(branin_client(gs), 6)
    assert len(optimize_calls) == 2
    assert all(c["num_restarts"] == 3 for c in optimize_calls)
    assert all(c["raw_samples"] == 32 for c in optimize_calls)


@pytest.mark.parametrize("existing", [False, True])
def test_attached_trials_count_as_initial_with_use_existing_trials(existing):
    gs = sketch_generation_strategy(
        num_initial=4, optimizer_options=FAST, use_existing_trials=existing
    )
    client = branin_client(gs)
    for x0 in (-2.0, 0.0, 2.0, 4.0, 6.0):
        index = client.attach_trial({"x0": x0, "x1": 5.0})
        client.complete_trial(
            trial_index=index, raw_data={"branin": branin({"x0": x0, "x1": 5.0})}
        )
    run_trials(client, 1)
    node = client._generation_strategy.current_node_name
    assert ("BoTorch" in node) == existing
    if existing:
        assert surrogate_model(client).train_X.shape[0] == 5


def test_default_generation_strategy_uses_ax_default_model():
    client = branin_client(default_generation_strategy(num_initial=4, seed=0))
    run_trials(client, 6)
    assert type(surrogate_model(client)) is SingleTaskGP


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"num_initial": 0}, InputDataError, "num_initial"),
        ({"model_class": torch.nn.Linear}, UnsupportedError, "model_class"),
        ({"botorch_acqf_class": NystromGP}, UnsupportedError, "botorch_acqf_class"),
        ({"botorch_acqf_options": {"beta": 1.0}}, InputDataError, "botorch_acqf_class"),
        # These failed only at the first trial (the seed) or the first model
        # trial, after the Sobol trials (the option), inside torch or BoTorch.
        ({"num_initial": True}, InputDataError, "num_initial must be an integer"),
        ({"seed": "x"}, InputDataError, "seed must be an integer"),
        ({"seed": 1.5}, InputDataError, "seed must be an integer"),
        (
            {"optimizer_options": {"num_restarts": 2, "bogus": 1}},
            InputDataError,
            r"optimizer_options \['bogus'\] are not arguments of optimize_acqf",
        ),
    ],
)
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        sketch_generation_strategy(**kwargs)


def test_multi_objective_client_fits_one_nystrom_gp_per_objective(optimize_calls):
    # Ax 1.3.1 batches outcomes into one model only for subclasses of BoTorch's
    # BatchedMultiOutputGPyTorchModel (ax's use_model_list); for NystromGP it
    # builds a ModelListGP of one single-output NystromGP per objective, each
    # with its own hyperparameters and inducing set, as a NystromGP of n x t
    # data has them (MultiOutputNystromGP).
    problem = BraninCurrin()
    client = Client(random_seed=0)
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0, 1))
            for i in range(2)
        ]
    )
    client.configure_optimization(objective="-branin, -currin")
    gs = sketch_generation_strategy(num_initial=4, optimizer_options=FAST, seed=0)
    client.set_generation_strategy(generation_strategy=gs)
    observed = []
    for _ in range(7):
        for index, p in client.get_next_trials(max_trials=1).items():
            x = torch.tensor([[p["x0"], p["x1"]]], dtype=torch.double)
            y = problem(x)[0]
            observed.append(y)
            client.complete_trial(
                trial_index=index,
                raw_data={"branin": float(y[0]), "currin": float(y[1])},
            )
    statuses = {t.status.name for t in client._experiment.trials.values()}
    assert statuses == {"COMPLETED"} and len(client._experiment.trials) == 7
    assert "BoTorch" in client._generation_strategy.current_node_name
    # Three BoTorch trials, each by qLogNEHVI on the NystromGP model list.
    assert len(optimize_calls) == 3
    acqf = optimize_calls[-1]["acq_function"]
    assert type(acqf) is qLogNoisyExpectedHypervolumeImprovement
    model = surrogate_model(client)
    assert acqf.model is model
    assert type(model) is ModelListGP
    assert [type(m) for m in model.models] == [NystromGP, NystromGP]
    assert all(m.train_X.shape[0] == 6 for m in model.models)  # before the last
    # The two objectives got their own fits.
    lengthscales = [m.covar_module.lengthscale for m in model.models]
    assert not torch.allclose(*lengthscales)
    # The path is Ax's choice for a non-batched class, not a fallback.
    surrogate = client._generation_strategy.adapter.generator.surrogate
    datasets = surrogate.training_data
    digest = client._generation_strategy.adapter.generator.search_space_digest
    configs = surrogate.surrogate_spec.model_configs
    assert use_model_list(datasets, digest, model_configs=configs)
    single_task = [type(configs[0])(botorch_model_class=SingleTaskGP)]
    assert not use_model_list(datasets, digest, model_configs=single_task)
    assert client.get_pareto_frontier()
