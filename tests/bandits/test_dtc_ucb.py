import pytest
import torch
from botorch.exceptions.errors import InputDataError
from gpytorch.kernels import RBFKernel

from botorch_sketch.bandits.dtc_ucb import DTCUCB


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"dictionary": [0, 99]}, r"\[0, 50\).*\[99\]"),
        ({"dictionary": [-1]}, r"\[0, 50\).*\[-1\]"),
        ({"dictionary": [0.5, 2.0]}, "integer"),
        ({"dictionary": [3, 3]}, "distinct"),
        ({"dictionary": -5}, "non-negative int"),
        ({"noise_var": float("nan")}, "noise_var must be finite and positive"),
        ({"beta": float("nan")}, "beta must be finite and non-negative"),
        ({"beta": -1.0}, "beta must be finite and non-negative"),
        ({"rkhs_norm": -1.0}, "rkhs_norm must be finite and non-negative"),
    ],
)
def test_bad_configuration_is_named(kwargs, match):
    arms = torch.rand(50, 2, dtype=torch.double)
    kw = {"noise_var": 0.1, **kwargs}
    with pytest.raises(InputDataError, match=match):
        DTCUCB(arms, RBFKernel().double(), **kw)


def test_a_valid_dictionary_is_kept():
    arms = torch.rand(50, 2, dtype=torch.double)
    policy = DTCUCB(arms, RBFKernel().double(), 0.1, dictionary=[7, 0, 49])
    assert policy.dictionary.tolist() == [7, 0, 49]
    assert DTCUCB(arms, RBFKernel().double(), 0.1, dictionary=[]).dictionary_size == 0


@pytest.mark.slow
@pytest.mark.parametrize(
    "policy",
    ["bkb-adaptive", "bkb", "gp-ucb", "dtc-uniform", "gp-ucb-fixed-width"],
)
def test_held_pulls_choose_the_eager_arms(policy):
    # From lazy_min_arms on, the arms' posteriors follow the pulls 8 at a time
    # and the step's arm comes from bounds: the same arms, variances and
    # dictionary as the eager route, fed the same pulls (lockstep).
    from benchmarks.bandits import Case, make_problem
    from botorch_sketch.bandits import BKB, GPUCB

    arms, kernel, env = make_problem(Case("t", 1500, 3, 0.5, 150, 0, ()))
    lam = env.noise_std**2
    base, kw = {
        "bkb-adaptive": (BKB, {"resample": "adaptive"}),
        "bkb": (BKB, {}),
        "gp-ucb": (GPUCB, {}),
        "dtc-uniform": (DTCUCB, {"dictionary": 40}),
        "gp-ucb-fixed-width": (GPUCB, {"beta": 2.0}),
    }[policy]
    kw = {"beta": "authors", **kw}
    eager, lazy = (
        base(
            arms,
            kernel,
            lam,
            generator=torch.Generator().manual_seed(2),
            lazy_updates=lazy,
            **kw,
        )
        for lazy in (False, True)
    )
    assert not eager.candidates.by_point and lazy.candidates.by_point
    held = 0
    for _ in range(150):
        chosen = eager.select()
        assert torch.equal(lazy.select(), chosen)
        reward = env.pull(chosen)
        eager.update(chosen, reward)
        lazy.update(chosen, reward)
        held = max(held, lazy.candidates.num_held)
    assert eager.candidates.num_held == 0 and held > 0
    assert torch.equal(lazy.dictionary, eager.dictionary)
    torch.testing.assert_close(lazy.mean, eager.mean, atol=1e-10, rtol=0)
    torch.testing.assert_close(
        lazy.candidates.variance, eager.candidates.variance, atol=1e-12, rtol=0
    )


def test_held_pulls_start_at_lazy_min_arms():
    arms = torch.rand(60, 2, dtype=torch.double)
    k = RBFKernel().double()
    assert not DTCUCB(arms, k, 0.1).lazy_updates
    assert DTCUCB(arms, k, 0.1, lazy_updates=True).candidates.lazy_pulls == 8
    few = type("Few", (DTCUCB,), {"lazy_min_arms": 60})
    assert few(arms, k, 0.1).lazy_updates and not few(arms[:59], k, 0.1).lazy_updates
    assert few(arms, k, 0.1, lazy_updates=False).candidates.lazy_pulls == 0


def test_held_pulls_are_a_cpu_default():
    # On a GPU the pass over the arms is cheap and the bookkeeping is not.
    many = DTCUCB.lazy_min_arms
    assert DTCUCB.lazy_by_default(many, torch.device("cpu"))
    assert not DTCUCB.lazy_by_default(many - 1, torch.device("cpu"))
    assert not DTCUCB.lazy_by_default(many, torch.device("cuda"))


def test_arms_must_be_floating_and_no_narrower_than_the_kernel():
    arms = torch.rand(30, 2, dtype=torch.double)
    kernel = RBFKernel().double()
    # Integer features failed inside torch (finfo); float32 arms under a
    # float64 kernel failed inside addmv once pulled.
    with pytest.raises(InputDataError, match="floating point tensor, got torch.int64"):
        DTCUCB((10 * arms).long(), kernel, 0.1)
    with pytest.raises(InputDataError, match="float32 on cpu but the kernel's raw_le"):
        DTCUCB(arms.float(), kernel, 0.1)
    # A float32 kernel on float64 arms computes in float64, as torch promotes.
    DTCUCB(arms, RBFKernel(), 0.1)


def test_float32_arms_take_batches_like_float64_ones():
    # The weight posterior runs in float64; a rank-q update of float32 arms
    # mixed the two (a RuntimeError inside the product).
    g = torch.Generator().manual_seed(0)
    arms = torch.rand(30, 2, generator=g, dtype=torch.double)
    rewards = torch.rand(30, generator=g, dtype=torch.double)
    policies = {
        dtype: DTCUCB(arms.to(dtype), RBFKernel().to(dtype), 0.1, dictionary=[1, 7, 20])
        for dtype in (torch.float32, torch.float64)
    }
    pulls = torch.tensor([3, 11, 25])
    for dtype, policy in policies.items():
        policy.update(pulls, rewards[pulls].to(dtype))
        policy.select(3)
    single, double = policies[torch.float32], policies[torch.float64]
    assert single.candidates.variance.dtype == torch.float32
    torch.testing.assert_close(
        single.candidates.variance.double(),
        double.candidates.variance,
        atol=1e-5,
        rtol=0,
    )
    torch.testing.assert_close(
        single.candidates.mean.double(), double.candidates.mean, atol=1e-5, rtol=0
    )
