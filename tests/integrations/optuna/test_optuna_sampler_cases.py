"""Optuna's own test cases for samplers (``optuna.testing.pytest_samplers``).

Optuna publishes them for samplers written outside it; its ``GPSampler`` runs
them with ``n_startup_trials=0``, with and without ``deterministic_objective``.
Every suggestion must lie in its distribution and be a plain ``int`` or
``float``, NaN objectives and conditional, dynamic and partly fixed
parameters must work, and several objectives must be taken. The same cases
run with optuna-integration's ``BoTorchSampler`` and this package's candidates
functions.
"""

import warnings

import pytest

optuna = pytest.importorskip("optuna")

from linear_operator.utils.warnings import NumericalWarning  # noqa: E402
from optuna.distributions import CategoricalDistribution  # noqa: E402
from optuna.testing.pytest_samplers import (  # noqa: E402
    BasicSamplerTestCase,
    MultiObjectiveSamplerTestCase,
    RelativeSamplerTestCase,
)

from botorch_sketch.integrations.optuna import (  # noqa: E402
    NystromCandidates,
    SketchSampler,
    nystrom_candidates_func,
)

# As GPSampler is run in Optuna's own suite: no startup trials, with and
# without a deterministic objective (the latter slow).
SKETCH_SAMPLERS = [
    lambda: SketchSampler(n_startup_trials=0),
    pytest.param(
        lambda: SketchSampler(n_startup_trials=0, deterministic_objective=True),
        marks=pytest.mark.slow,
    ),
]


class TestBasicSampler(BasicSamplerTestCase):
    @pytest.fixture(params=SKETCH_SAMPLERS, ids=["default", "deterministic"])
    def sampler(self, request):
        return request.param


class TestRelativeSampler(RelativeSamplerTestCase):
    @pytest.fixture(params=SKETCH_SAMPLERS, ids=["default", "deterministic"])
    def sampler(self, request):
        return request.param


@pytest.mark.slow
class TestMultiObjectiveSampler(MultiObjectiveSamplerTestCase):
    @pytest.fixture(
        params=[
            lambda: SketchSampler(),
            lambda: SketchSampler(deterministic_objective=True),
        ],
        ids=["default", "deterministic"],
    )
    def sampler(self, request):
        return request.param


def test_suggestions_on_running_trials_points_do_not_flood_jitter_warnings():
    # Optuna's relative categorical case: 9 configurations, one told, ten
    # suggested in a row. Candidates on the running trials' points made
    # qLogNEI's joint covariance singular, and linear_operator said so at
    # each evaluation: about 300 warnings over Optuna's cases.
    space = {
        "x": CategoricalDistribution([1, 10, 100]),
        "y": CategoricalDistribution([-1, -10, -100]),
    }
    study = optuna.create_study(sampler=SketchSampler(n_startup_trials=0, seed=0))
    trial = study.ask(space)
    study.tell(trial, sum(trial.params.values()))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        points = [tuple(study.ask(space).params.values()) for _ in range(10)]
    # The 8 untried configurations first, each once; then repeats.
    assert len(set(points[:8]) | {tuple(trial.params.values())}) == 9
    assert not [w for w in caught if issubclass(w.category, NumericalWarning)]


def _botorch_sampler(candidates_func):
    # optuna-integration's BoTorchSampler with our candidates functions; it
    # needs one startup trial (its candidates functions take no empty data).
    def build():
        from optuna_integration import BoTorchSampler

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return BoTorchSampler(candidates_func=candidates_func(), n_startup_trials=1)

    return build


@pytest.mark.slow
class TestBoTorchSamplerWithNystromCandidates(BasicSamplerTestCase):
    @pytest.fixture(params=[_botorch_sampler(NystromCandidates)], ids=["carried"])
    def sampler(self, request):
        return request.param


@pytest.mark.slow
class TestBoTorchSamplerRelativeWithNystromCandidates(RelativeSamplerTestCase):
    @pytest.fixture(params=[_botorch_sampler(NystromCandidates)], ids=["carried"])
    def sampler(self, request):
        return request.param


@pytest.mark.slow
class TestBoTorchSamplerMultiObjectiveWithNystromCandidatesFunc(
    MultiObjectiveSamplerTestCase
):
    @pytest.fixture(
        params=[_botorch_sampler(lambda: nystrom_candidates_func)], ids=["refitted"]
    )
    def sampler(self, request):
        return request.param
