"""SketchSampler warm-started from trials it did not propose.

A user reported that a log-scaled float whose earlier trials all sit at
integers (enqueued, added with ``create_trial``, imported from another study)
was then proposed only at integers. The variants below did not reproduce it:
the sampler encodes and rounds by the search space's distributions, never by
the observed values. What they found instead: a sampler reused on a second
study kept the first study's search space (Optuna's ``IntersectionSearchSpace``
caches it per study id), so the second study's parameters were sampled at
random, or the sampler raised.
"""

import math

import pytest

optuna = pytest.importorskip("optuna")

from optuna.distributions import (  # noqa: E402
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.trial import create_trial  # noqa: E402
from optuna_helpers import FAST, model_based  # noqa: E402

from botorch_sketch.integrations.optuna import SketchSampler  # noqa: E402

LOG_X = FloatDistribution(0.5, 100.0, log=True)
WARM = (1, 2, 4, 8, 16, 32, 64)


def _value(x, kind="a"):
    return (math.log(x) - math.log(7.3)) ** 2 + (kind == "b")


def _log_objective(trial):
    return _value(trial.suggest_float("x", 0.5, 100.0, log=True))


def _warm_study(sampler, distribution=LOG_X, values=WARM, convert=int):
    study = optuna.create_study(sampler=sampler)
    for x in values:
        study.add_trial(
            create_trial(
                params={"x": convert(x)},
                distributions={"x": distribution},
                value=_value(x),
            )
        )
    return study


@pytest.mark.parametrize("convert", [int, float])
def test_a_log_float_added_at_integers_is_proposed_off_them(convert):
    # Python ints and floats stored by create_trial, fewer startup trials
    # than warm ones: the model's proposals are log-scale floats.
    sampler = SketchSampler(seed=0, n_startup_trials=3, **FAST)
    study = _warm_study(sampler, convert=convert)
    study.optimize(_log_objective, n_trials=3)
    new = study.trials[len(WARM) :]
    assert len(model_based(study)) == 3
    values = [t.params["x"] for t in new]
    assert all(isinstance(x, float) and 0.5 <= x <= 100.0 for x in values)
    assert not all(x.is_integer() for x in values)


def test_bounds_encoded_as_an_integers_are_not_rounded_by_the_sampler():
    # (0.5, 100.5) on a log scale is encoded as a log-integer's bounds; the
    # candidates functions without a search space cannot tell the two apart,
    # the sampler reads the distribution.
    distribution = FloatDistribution(0.5, 100.5, log=True)
    kind = CategoricalDistribution(["a", "b"])  # a rounding of its own
    sampler = SketchSampler(seed=0, n_startup_trials=3, **FAST)
    study = optuna.create_study(sampler=sampler)
    for x in WARM:
        study.add_trial(
            create_trial(
                params={"x": x, "kind": "a"},
                distributions={"x": distribution, "kind": kind},
                value=_value(x),
            )
        )

    def objective(trial):
        x = trial.suggest_float("x", 0.5, 100.5, log=True)
        return _value(x, trial.suggest_categorical("kind", ["a", "b"]))

    study.optimize(objective, n_trials=3)
    values = [t.params["x"] for t in study.trials[len(WARM) :]]
    assert not all(float(x).is_integer() for x in values)


def _reused_sampler_studies(storage=None):
    # A first study of an integer parameter (startup trials only, no model;
    # two not enqueued, so that the sampler read its search space), then a
    # second one, with the same sampler, of its trials as log floats.
    sampler = SketchSampler(seed=0, n_startup_trials=20, **FAST)
    first = optuna.create_study(sampler=sampler, storage=storage)
    for x in WARM:
        first.enqueue_trial({"x": x})
    first.optimize(
        lambda t: _value(t.suggest_int("x", 1, 100, log=True)), n_trials=len(WARM) + 2
    )
    second = optuna.create_study(sampler=sampler, storage=storage)
    for t in first.trials:
        second.add_trial(
            create_trial(
                params={"x": float(t.params["x"])},
                distributions={"x": LOG_X},
                value=t.value,
            )
        )
    return sampler, second


def test_a_sampler_reused_on_a_new_study_reads_that_studys_search_space():
    # Each study in its own in-memory storage (both numbered 0): the first
    # study's IntDistribution was kept, x left out of the second's space.
    sampler, second = _reused_sampler_studies()
    trial = second.ask()
    assert sampler.infer_relative_search_space(second, trial) == {"x": LOG_X}
    second.tell(trial, _value(trial.suggest_float("x", 0.5, 100.0, log=True)))
    assert not isinstance(trial.params["x"], int)


def test_a_sampler_reused_on_another_study_of_the_storage_does_not_raise():
    # Two studies of one storage: Optuna's search space raised ValueError
    # ("cannot handle multiple studies") at the second study's first trial.
    storage = optuna.storages.InMemoryStorage()
    sampler, second = _reused_sampler_studies(storage)
    trial = second.ask()
    assert sampler.infer_relative_search_space(second, trial) == {"x": LOG_X}


def test_an_integer_warm_start_of_a_float_parameter_is_optunas_error():
    # Warm trials of an IntDistribution and an objective of a log float: as
    # with Optuna's own samplers, Optuna refuses the relative value.
    sampler = SketchSampler(seed=0, n_startup_trials=3, **FAST)
    study = _warm_study(sampler, distribution=IntDistribution(1, 100, log=True))
    with pytest.raises(ValueError, match="different distribution kind"):
        study.optimize(_log_objective, n_trials=1)
