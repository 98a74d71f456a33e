import pytest
import torch
from botorch.exceptions.errors import InputDataError, UnsupportedError

from botorch_sketch.bandits import linucb
from botorch_sketch.bandits.fixed_arms import FixedArmSet
from botorch_sketch.bandits.linear_environments import sphere_arms_environment
from botorch_sketch.bandits.linucb import LinUCB, SGDLinUCB
from botorch_sketch.bandits.loop import run_finite
from botorch_sketch.bandits.random_policy import RandomPolicy
from botorch_sketch.sketching.linear import InverseRidge


def test_linucb_sherman_morrison_matches_direct_solve(tkwargs):
    g = torch.Generator().manual_seed(0)
    policy = LinUCB(5, noise_var=0.7, width=2.0, **tkwargs)
    F = torch.randn(30, 5, generator=g, **tkwargs)
    r = torch.randn(30, generator=g, **tkwargs)
    policy.update(F, r)
    V = F.mT @ F + 0.7 * torch.eye(5, **tkwargs)
    C = torch.randn(8, 5, generator=g, **tkwargs)
    theta = torch.linalg.solve(V, F.mT @ r)
    width = (C * torch.linalg.solve(V, C.mT).mT).sum(-1).sqrt()
    torch.testing.assert_close(policy.theta, theta)
    torch.testing.assert_close(policy.scores(C), C @ theta + 2.0 * width)
    assert int(policy.select(C)) == int(torch.argmax(C @ theta + 2.0 * width))


def test_sgd_linucb_widths_track_linucb_on_fixed_arms(tkwargs):
    env = sphere_arms_environment(
        10, 8, 0.1, generator=torch.Generator().manual_seed(1)
    )
    sgd = SGDLinUCB(8, width=0.5, generator=torch.Generator().manual_seed(0))
    run_finite(FixedArmSet(sgd, env.arms), env, 1500, progress=False)
    X = sgd.solver.X
    V = X.mT @ X + torch.eye(8, **tkwargs)
    exact = (env.arms * torch.linalg.solve(V, env.arms.mT).mT).sum(-1)
    tracked = sgd.tracker.quadratic_forms()
    assert torch.allclose(tracked, exact, rtol=0.5), (tracked, exact)


@pytest.mark.parametrize("scale", [10.0, 100.0])
def test_sgd_linucb_features_beyond_unit_norm_scale_the_step(scale, tkwargs):
    # The schedules assume ||x|| <= 1: features ten times longer gave theta near
    # 2e31, a hundred times NaN scores. With the steps divided by scale^2, the
    # policy on scale * x is the policy on x with the ridge over scale^2.
    g = torch.Generator().manual_seed(3)
    arms = torch.randn(10, 8, generator=g, dtype=tkwargs["dtype"]).to(**tkwargs)
    arms = arms / arms.norm(dim=-1, keepdim=True)
    pulls = torch.randint(10, (600,), generator=g).to(tkwargs["device"])
    rewards = arms[pulls, 0] + 0.1 * torch.randn(600, generator=g, **tkwargs)
    long = SGDLinUCB(8, generator=torch.Generator().manual_seed(0))
    unit = SGDLinUCB(
        8, ridge=InverseRidge(1 / scale**2), generator=torch.Generator().manual_seed(0)
    )
    # Scoring first starts the width trackers on the arms.
    long.scores(scale * arms)
    unit.scores(arms)
    for i in range(0, 600, 50):
        long.update(scale * arms[pulls[i : i + 50]], rewards[i : i + 50])
        unit.update(arms[pulls[i : i + 50]], rewards[i : i + 50])
    scores = long.scores(scale * arms)
    assert bool(torch.isfinite(scores).all())
    torch.testing.assert_close(scale * long.theta, unit.theta, rtol=1e-6, atol=1e-9)
    torch.testing.assert_close(scores, unit.scores(arms), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("dim", [20, 100])
def test_sgd_linucb_reward_close_to_linucb(dim, tkwargs):
    rewards = {}
    for name, policy in [
        ("lin", LinUCB(dim, width=0.5)),
        ("sgd", SGDLinUCB(dim, width=0.5, generator=torch.Generator().manual_seed(0))),
        ("rand", None),
    ]:
        env = sphere_arms_environment(
            10, dim, 0.3, generator=torch.Generator().manual_seed(2)
        )
        wrapped = (
            FixedArmSet(policy, env.arms)
            if policy is not None
            else RandomPolicy(env.arms, generator=torch.Generator().manual_seed(0))
        )
        trace = run_finite(wrapped, env, 600, progress=False)
        rewards[name] = float(trace.cumulative_reward[-1])
    # 600 rounds is short for SGD; the benchmark checks the 90% target at length.
    assert rewards["sgd"] >= 0.8 * rewards["lin"], rewards
    assert rewards["sgd"] > rewards["rand"] + 200, rewards


def test_contextual_candidates_change(tkwargs):
    g = torch.Generator().manual_seed(3)
    policy = SGDLinUCB(6, tracking_steps=2, generator=g)
    for _ in range(20):
        C = torch.randn(4, 6, generator=g, **tkwargs)
        i = policy.select(C)
        policy.update(C[i].unsqueeze(0), torch.ones(1, **tkwargs))
    assert policy.tracker.vectors.shape == (4, 6)
    policy.select(torch.randn(7, 6, generator=g, **tkwargs))  # new slot count
    assert policy.tracker.vectors.shape == (7, 6)


@pytest.mark.parametrize("width", [float("nan"), -1.0, float("inf")])
def test_bad_width_is_named(width):
    for cls in (LinUCB, SGDLinUCB):
        with pytest.raises(InputDataError, match="width must be finite"):
            cls(dim=4, width=width)


def test_bad_input(tkwargs):
    for policy in (LinUCB(3), SGDLinUCB(3)):
        with pytest.raises(InputDataError):
            policy.select(torch.full((2, 3), float("nan"), **tkwargs))
        with pytest.raises(InputDataError):
            policy.select(torch.ones(0, 3, **tkwargs))
        with pytest.raises(InputDataError):
            policy.update(torch.ones(2, 3, **tkwargs), torch.ones(3, **tkwargs))
    wrapped = FixedArmSet(LinUCB(3), torch.eye(3, **tkwargs))
    with pytest.raises(UnsupportedError):
        wrapped.select(2)
    with pytest.raises(InputDataError):
        wrapped.update(torch.tensor([5]), torch.ones(1, **tkwargs))


def test_linucb_checks_an_unchanged_arm_set_once(tkwargs, monkeypatch):
    # Checked on the first round, not again while the same tensor comes back
    # unmodified; a write in place (a new version) is checked again.
    checks = []
    real = linucb._check_candidates

    def counted(candidates, dim):
        checks.append(candidates.shape)
        real(candidates, dim)

    monkeypatch.setattr(linucb, "_check_candidates", counted)
    policy = LinUCB(3)
    arms = torch.eye(3, **tkwargs)
    for _ in range(4):
        i = policy.select(arms)
        policy.update(arms[i : i + 1], torch.ones(1, **tkwargs))
    assert len(checks) == 1
    arms[1, 2] = float("nan")
    with pytest.raises(InputDataError):
        policy.select(arms)
    other = torch.eye(3, **tkwargs)
    policy.select(other)
    assert len(checks) == 3


def test_sgd_linucb_notices_candidates_written_in_place():
    # The same tensor passed again after an in-place write is a new arm set:
    # the policy must score the new values, not its copy of the old ones.
    g = torch.Generator().manual_seed(3)
    arms = torch.randn(5, 12, generator=g, dtype=torch.double)
    policy = SGDLinUCB(12, width=0.5, generator=torch.Generator().manual_seed(0))
    for _ in range(20):
        i = int(policy.select(arms))
        policy.update(arms[i : i + 1], torch.ones(1, dtype=torch.double))
    arms.copy_(torch.randn(5, 12, generator=g, dtype=torch.double))
    scores = policy.scores(arms)
    assert policy.basis is None
    torch.testing.assert_close(policy.tracker.vectors, arms)
    widths = policy.tracker.quadratic_forms().sqrt()
    torch.testing.assert_close(scores, arms @ policy.theta + 0.5 * widths)


def test_sgd_linucb_on_a_fixed_arm_set_stores_no_feature_copies():
    from botorch_sketch.bandits.fixed_arms import FixedArmSet

    g = torch.Generator().manual_seed(4)
    arms = torch.randn(6, 40, generator=g, dtype=torch.double)
    policy = FixedArmSet(SGDLinUCB(40, generator=torch.Generator()), arms)
    chosen = []
    for _ in range(30):
        i = policy.select()
        policy.update(i, torch.zeros(1, dtype=torch.double))
        chosen.append(int(i))
    inner = policy.policy
    assert inner.basis is not None and inner.basis.shape == (40, 6)
    assert inner.solver is None and inner.num_observations == 30
    assert inner.arm_set.pulls == chosen
    assert inner.theta.shape == (40,)
    # Leaving the coordinates: the history shares rows of one private copy.
    inner.scores(torch.randn(6, 40, generator=g, dtype=torch.double))
    assert inner.arm_set is None
    assert inner.solver.n == 30 and inner.solver._num_copied == 0
    storages = {row.untyped_storage().data_ptr() for row in inner.solver._rows}
    assert len(storages) == 1


@pytest.mark.parametrize("cls", [LinUCB, SGDLinUCB])
def test_arms_made_in_inference_mode_are_checked_every_round(cls, tkwargs):
    # Inference tensors keep no version counter (reading it raised a
    # RuntimeError); they are checked whenever they are passed, and the
    # policy plays as it does on an ordinary copy of the same arms.
    env = sphere_arms_environment(4, 6, 0.1, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        frozen = env.arms.to(**tkwargs).clone()
    arms = env.arms.to(**tkwargs).clone()
    noise = 0.1 * torch.randn(30, generator=torch.Generator().manual_seed(1))

    def play(policy, arms):
        picks = []
        for t in range(30):
            i = int(policy.select(arms))
            picks.append(i)
            reward = (env.means[i] + noise[t]).reshape(1).to(**tkwargs)
            policy.update(arms[i : i + 1], reward)
        return picks

    def build():
        kwargs = {"generator": torch.Generator().manual_seed(2)}
        return cls(6, **({} if cls is LinUCB else kwargs), **tkwargs)

    reference, policy = build(), build()
    assert play(policy, frozen) == play(reference, arms)
    torch.testing.assert_close(policy.theta, reference.theta, rtol=1e-9, atol=1e-12)
    with torch.inference_mode():
        frozen[2, 0] = float("nan")
        with pytest.raises(InputDataError, match="NaN or infinite"):
            policy.select(frozen)


def test_sgd_linucb_plays_arms_that_require_grad_like_detached_ones(tkwargs):
    # Its tracked state is written with ``out=``, which autograd refuses.
    env = sphere_arms_environment(4, 6, 0.1, generator=torch.Generator().manual_seed(0))
    arms = env.arms.to(**tkwargs)
    picks = []
    for candidates in (arms.clone().requires_grad_(True), arms.clone()):
        policy = SGDLinUCB(6, generator=torch.Generator().manual_seed(1), **tkwargs)
        run = []
        for _ in range(20):
            i = int(policy.select(candidates))
            run.append(i)
            policy.update(candidates[i : i + 1], env.means[i].reshape(1).to(**tkwargs))
        picks.append(run)
    assert picks[0] == picks[1]


def test_sgd_linucb_names_a_bad_dimension():
    # It was named as its step schedule's constant ("c must be positive").
    with pytest.raises(InputDataError, match="dim must be at least 1, got 0"):
        SGDLinUCB(0)
