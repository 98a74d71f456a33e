"""Shared by the tests of botorch_sketch.integrations.optuna (needs Optuna)."""

import numpy as np
import optuna
from optuna.distributions import (
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

from botorch_sketch.integrations.optuna.trials import _RELATIVE_PARAMS_KEY

optuna.logging.set_verbosity(optuna.logging.WARNING)


# A smaller acquisition optimisation where a test checks behaviour, not quality.
FAST = {"num_restarts": 4, "raw_samples": 64, "mc_samples": 32}


def quadratic(trial):
    x = trial.suggest_float("x", -3.0, 3.0)
    y = trial.suggest_float("y", -3.0, 3.0)
    return (x - 1.0) ** 2 + (y + 0.5) ** 2


def model_based(study):
    # Trials whose parameters the model chose carry the shared relative params.
    return [
        t
        for t in study.trials
        if any(k.startswith(_RELATIVE_PARAMS_KEY) for k in t.system_attrs)
    ]


def readme_objective(trial):
    # The README's Optuna example, verbatim.
    lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
    depth = trial.suggest_int("depth", 2, 12)
    kind = trial.suggest_categorical("kind", ["gbdt", "dart"])
    return (depth - 6) ** 2 / 10 + abs(lr - 0.01) + (kind == "dart")


EVERY_DISTRIBUTION = {
    "x": FloatDistribution(-1.0, 1.0),
    "log_x": FloatDistribution(1e-7, 1.0, log=True),
    "step_x": FloatDistribution(-10.0, 10.0, step=0.5),
    "n": IntDistribution(3, 10),
    "log_n": IntDistribution(1, 100, log=True),
    "step_n": IntDistribution(3, 9, step=2),
    "choice": CategoricalDistribution([1, 10, 100]),
    "mixed": CategoricalDistribution(["a", None, 2.5]),
}


def check_plain_and_contained(params):
    # Optuna's relative-sampler tests: no NumPy scalars, int for integers,
    # float for floats, each value inside its distribution.
    assert params.keys() == EVERY_DISTRIBUTION.keys()
    for name, value in params.items():
        distribution = EVERY_DISTRIBUTION[name]
        assert not isinstance(value, (np.floating, np.integer)), (name, value)
        if isinstance(distribution, FloatDistribution):
            assert type(value) is float, name
        elif isinstance(distribution, IntDistribution):
            assert type(value) is int, name
        else:
            # The choice itself, of its own type.
            assert any(value is choice for choice in distribution.choices), name
        assert distribution._contains(distribution.to_internal_repr(value)), name


def new_trial(study):
    # A trial with no parameters yet, as Optuna's sampler test-suite makes one.
    return study._storage.get_trial(study._storage.create_new_trial(study._study_id))
