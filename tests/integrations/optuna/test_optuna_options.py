import dataclasses

import numpy as np
import pytest

optuna = pytest.importorskip("optuna")

from botorch.exceptions.errors import InputDataError, UnsupportedError  # noqa: E402

from botorch_sketch import GradientSubsetGP  # noqa: E402
from botorch_sketch.integrations.optuna import SketchSampler  # noqa: E402


@pytest.mark.parametrize(
    "options, error, message",
    [
        ({"n_startup_trials": -1}, InputDataError, "n_startup_trials"),
        ({"num_restarts": 0}, InputDataError, "num_restarts"),
        ({"num_restarts": 8, "raw_samples": 4}, InputDataError, "raw_samples"),
        ({"model": "nystrom"}, UnsupportedError, "model must be"),
        ({"model": dict}, UnsupportedError, "model must be"),
        (
            {"model": GradientSubsetGP, "model_options": {"subset": 3}},
            InputDataError,
            "subset",
        ),
        (
            {"model": lambda X, Y: None, "model_options": {"a": 1}},
            InputDataError,
            "factory",
        ),
        ({"independent_sampler": "random"}, UnsupportedError, "independent_sampler"),
        ({"acquisition": "qEI"}, InputDataError, "acquisition"),
        ({"warp_objective": "yes"}, InputDataError, "warp_objective"),
        ({"failed_trials": "drop"}, InputDataError, "failed_trials"),
        # NumPy's casting error came later and did not name the argument.
        ({"seed": "x"}, InputDataError, "seed"),
        ({"seed": 1.5}, InputDataError, "seed"),
        ({"seed": True}, InputDataError, "seed"),
        ({"seed": -1}, InputDataError, "seed"),
        ({"seed": 2**32}, InputDataError, "seed"),
    ],
)
def test_bad_options_raise(options, error, message):
    with pytest.raises(error, match=message):
        SketchSampler(**options)


def test_integer_seeds_are_accepted():
    for seed in (None, 0, 2**32 - 1, np.int64(3)):
        sampler = SketchSampler(seed=seed)
        assert isinstance(sampler, SketchSampler)


def test_the_options_are_checked_once_and_frozen():
    sampler = SketchSampler(seed=np.int64(3), model_options=None, acquisition="mc")
    options = sampler._options
    assert type(options.seed) is int and options.seed == 3
    assert options.model_options == {} and not options.analytic
    assert options.carries_nystrom
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.seed = 4
    assert not SketchSampler(warm_start=False)._options.carries_nystrom


def test_the_model_of_failures_takes_smaller_caps():
    options = SketchSampler()._options
    objective = options.incremental_kwargs(2)
    failures = options.incremental_kwargs(2, failures=True)
    assert objective["max_inducing"] == 384
    assert objective["model_kwargs"]["fit_subset_size"] == 500
    assert failures["max_inducing"] == 128
    assert failures["model_kwargs"]["fit_subset_size"] == 200
    # A smaller cap of the user's is kept for both.
    small = SketchSampler(max_inducing=64, fit_subset_size=100)._options
    assert small.incremental_kwargs(2, failures=True)["max_inducing"] == 64
    kwargs = small.incremental_kwargs(2, failures=True)["model_kwargs"]
    # The failures keep BoTorch's kernel; the objectives take GPSampler's.
    assert kwargs == {"fit_subset_size": 100}
    kwargs = small.incremental_kwargs(2)["model_kwargs"]
    assert set(kwargs) == {"fit_subset_size", "covar_module"}
