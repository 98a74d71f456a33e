import math
import random

import numpy as np
import pytest
import torch

optuna = pytest.importorskip("optuna")

from optuna.distributions import (  # noqa: E402
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna_helpers import (  # noqa: E402
    EVERY_DISTRIBUTION,
    FAST,
    check_plain_and_contained,
    new_trial,
)

from botorch_sketch.integrations.optuna import SketchSampler  # noqa: E402
from botorch_sketch.integrations.optuna.encoding import (  # noqa: E402
    _contains,
    _discrete_choices,
    _Encoding,
    _rounding,
)


def test_suggested_values_are_python_scalars_in_their_distributions():
    # A continuous parameter at its upper bound came back as numpy.float64
    # (this seed puts x there on its second suggestion).
    sampler = SketchSampler(
        seed=0, n_startup_trials=0, warn_independent_sampling=False, **FAST
    )
    study = optuna.create_study(sampler=sampler, direction="maximize")
    trial = study.ask(EVERY_DISTRIBUTION)
    study.tell(trial, trial.params["x"])
    check_plain_and_contained(trial.params)
    for _ in range(3):
        params = sampler.sample_relative(study, new_trial(study), EVERY_DISTRIBUTION)
        check_plain_and_contained(params)


def _random_distribution(rng):
    kind = rng.randrange(7)
    if kind == 0:
        low = rng.uniform(-100, 100)
        return FloatDistribution(
            low, low + rng.choice([0.0, 1e-9, rng.uniform(0, 100)])
        )
    if kind == 1:
        low = 10 ** rng.uniform(-8, 2)
        high = low * rng.choice([1.0, 1 + 1e-12, 10 ** rng.uniform(0, 6)])
        return FloatDistribution(low, high, log=True)
    if kind == 2:
        step, low = rng.choice([0.1, 0.25, 1e-3, 3.0]), rng.uniform(-10, 10)
        return FloatDistribution(low, low + step * rng.randrange(0, 50), step=step)
    if kind == 3:
        low = rng.randrange(-50, 50)
        return IntDistribution(low, low + rng.randrange(0, 40))
    if kind == 4:
        low = rng.randrange(1, 50)
        return IntDistribution(low, low + rng.randrange(0, 2000), log=True)
    if kind == 5:
        low, step = rng.randrange(-50, 50), rng.randrange(1, 7)
        return IntDistribution(low, low + step * rng.randrange(0, 20), step=step)
    choices = rng.choice([["a"], ["a", "b", None], [1, 2.5, "x", True], [3]])
    return CategoricalDistribution(choices)


def _random_value(rng, d):
    if isinstance(d, CategoricalDistribution):
        return rng.choice(d.choices)
    if isinstance(d, IntDistribution):
        n = (d.high - d.low) // d.step
        return rng.choice([d.low, d.high, d.low + d.step * rng.randrange(0, n + 1)])
    if d.step is not None:
        return d.low + d.step * rng.randrange(0, round((d.high - d.low) / d.step) + 1)
    if d.log:
        return math.exp(rng.uniform(math.log(d.low), math.log(d.high)))
    return rng.choice([d.low, d.high, rng.uniform(d.low, d.high)])


@pytest.mark.filterwarnings("ignore:The distribution is specified by")
def test_the_encoding_gives_the_floats_of_optunas_search_space_transform():
    # The encoding was Optuna's private _SearchSpaceTransform(transform_0_1=True)
    # (BoTorchSampler's); it is now written on the distributions' public
    # attributes and must give the same floats, and the same values back.
    transform_module = pytest.importorskip("optuna._transform")
    rng = random.Random(0)
    for _ in range(300):
        space = {f"p{i}": _random_distribution(rng) for i in range(rng.randrange(1, 6))}
        transform = transform_module._SearchSpaceTransform(space, transform_0_1=True)
        encoding = _Encoding(space)
        for _ in range(3):
            params = {name: _random_value(rng, d) for name, d in space.items()}
            expected = transform.transform(params)
            assert np.array_equal(encoding.encode(params), expected), (space, params)
            x = np.array([rng.uniform(-0.2, 1.2) for _ in expected])
            x[rng.randrange(len(x))] = rng.choice([0.0, 1.0])
            decoded, untransformed = encoding.decode(x), transform.untransform(x)
            assert decoded == untransformed, (space, x)
            for name, d in space.items():
                if isinstance(d, FloatDistribution):
                    assert type(decoded[name]) is float
                elif isinstance(d, IntDistribution):
                    assert type(decoded[name]) is int
                else:
                    assert decoded[name] is untransformed[name]
            for candidate in (params, decoded, {**params, "p0": "z"}, {}):
                try:
                    contained = all(
                        name in candidate
                        and d._contains(d.to_internal_repr(candidate[name]))
                        for name, d in space.items()
                    )
                except (ValueError, TypeError):
                    contained = False
                assert _contains(space, candidate) == contained, (space, candidate)


def test_only_a_space_with_steps_or_choices_is_rounded():
    continuous = {
        "x": FloatDistribution(0, 1),
        "lr": FloatDistribution(1e-3, 1, log=True),
    }
    assert _rounding(_Encoding(continuous)) is None
    space = {**continuous, "n": IntDistribution(0, 4)}
    round_to_grid = _rounding(_Encoding(space))
    X = torch.tensor([[[0.3, 0.5, 0.49]], [[0.3, 0.5, 0.51]]], dtype=torch.float64)
    rounded = round_to_grid(X)
    assert rounded.shape == X.shape
    # Continuous columns only through exp and log.
    assert torch.allclose(rounded[..., :2], X[..., :2], rtol=0, atol=1e-12)
    # n in 0..4 spans [-0.5, 4.5]: 0.49 is n = 2 (0.5), and so is 0.51.
    assert rounded[..., 2].flatten().tolist() == [0.5, 0.5]


def test_discrete_choices_are_the_encodings_of_every_small_grid():
    space = {
        "x": FloatDistribution(0, 1),
        "n": IntDistribution(1, 16),
        "kind": CategoricalDistribution(["a", "b", "c"]),
        "s": FloatDistribution(0.0, 1.0, step=0.25),
        "big": IntDistribution(1, 17),  # 17 values: rounded only
        "k": IntDistribution(1, 8, log=True),
        "one": IntDistribution(3, 3),
    }
    encoding = _Encoding(space)
    choices = _discrete_choices(encoding)
    base = {"x": 0.5, "n": 1, "kind": "a", "s": 0.0, "big": 1, "k": 1, "one": 3}
    values = {
        "n": list(range(1, 17)),
        "kind": ["a", "b", "c"],
        "s": [0.0, 0.25, 0.5, 0.75, 1.0],
        "k": list(range(1, 9)),
    }
    assert [c.tolist() for c, _ in choices] == [
        encoding.columns[list(space).index(name)].tolist() for name in values
    ]
    for (columns, encoded), (name, grid) in zip(choices, values.items(), strict=True):
        expected = [encoding.encode({**base, name: v})[columns.numpy()] for v in grid]
        assert encoded.shape == (len(grid), len(columns))
        assert np.allclose(encoded.numpy(), np.stack(expected), rtol=0, atol=1e-15)
