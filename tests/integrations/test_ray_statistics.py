"""NystromGP's statistics map-reduced over shards on a local Ray instance."""

import os
import signal
import sys
from functools import partial

import helpers
import numpy as np
import pytest
import torch
from botorch.acquisition import LogExpectedImprovement
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.models.transforms.input import Normalize
from botorch.sampling import SobolQMCNormalSampler

from botorch_sketch.models.nystrom_gp import NystromGP
from botorch_sketch.sketching.rules import GreedyVarianceSelector

ray = pytest.importorskip("ray")

from botorch_sketch.integrations.ray_statistics import (  # noqa: E402
    ShardFailedError,
    ShardFormat,
    build_sharded_nystrom_gp,
    rebuild,
    refresh,
)

D = 3


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    # The shard-making helpers below run on the workers, which cannot import
    # this test module or tests/helpers.py: ship them by value.
    for module in (sys.modules[__name__], helpers):
        ray.cloudpickle.register_pickle_by_value(module)
    yield ray
    for module in (sys.modules[__name__], helpers):
        ray.cloudpickle.unregister_pickle_by_value(module)
    ray.shutdown()


def _data(n, seed):
    X, Y = helpers.toy_data(n, D, noise_sd=0.2, seed=seed, low=-1.0, high=3.0)
    return X, 3 + 2 * Y


def _parts(seed=0, sizes=(250, 300, 150)):
    X, Y = _data(sum(sizes), seed)
    bounds = np.cumsum((0, *sizes))
    pairs = zip(bounds[:-1], bounds[1:], strict=True)
    return X, Y, [(X[a:b], Y[a:b]) for a, b in pairs]


def _made(seed, rows):
    # A shard made on its worker from a seed.
    return _data(rows, seed)


@pytest.fixture(scope="module")
def built(local_ray):
    X, Y, parts = _parts()
    refs = [ray.put(p) for p in parts]
    model = build_sharded_nystrom_gp(
        refs,
        fit_subset_size=200,
        inducing=GreedyVarianceSelector(40),
        input_transform=Normalize(D),
    )
    return X, Y, parts, model


def _single_process(model, X, Y, own_transforms=True):
    # The single-process model on all data, same inducing set and hyperparameters;
    # its transforms are learned on all data by itself (or the model's).
    ref = NystromGP(X, Y, inducing=model._inducing.fixed, input_transform=Normalize(D))
    state = model.state_dict()
    if own_transforms:
        state = {k: v for k, v in state.items() if "transform" not in k}
    ref.load_state_dict(state, strict=False)
    for k, v in model.state_dict().items():
        if "transform" in k:
            assert torch.allclose(v.double(), ref.state_dict()[k].double(), 0, 1e-12)
    return ref


def _assert_same_posterior(a, b, tol=1e-10):
    Xt = _data(12, 99)[0].reshape(3, 4, D)
    pa, pb = a.posterior(Xt), b.posterior(Xt)
    assert torch.allclose(pa.mean, pb.mean, rtol=0, atol=tol)
    assert torch.allclose(
        pa.distribution.covariance_matrix,
        pb.distribution.covariance_matrix,
        rtol=0,
        atol=tol,
    )


@pytest.mark.slow
def test_sharded_posterior_equals_the_single_process_model(built):
    X, Y, _, model = built
    record = model.shard_record
    assert record.shard_sizes == (250, 300, 150) and record.num_data == 700
    assert model.train_X.shape == (200, D) and record.sample_rows == 200
    assert model.inducing_points.shape[0] == 40
    ref = _single_process(model, X, Y)
    _assert_same_posterior(model, ref)
    assert torch.allclose(
        model.log_marginal_likelihood(), ref.log_marginal_likelihood(), atol=1e-8
    )
    # The sample is drawn across shards: rows of the data, from every shard.
    rows = (model.train_X.unsqueeze(1) == X.unsqueeze(0)).all(-1).any(-1)
    assert bool(rows.all())


def test_sharded_model_works_with_acquisition_conditioning_and_fantasies(built):
    X, Y, _, model = built
    ref = _single_process(model, X, Y)
    Xt = _data(5, 7)[0].unsqueeze(1)
    ei = LogExpectedImprovement(model, best_f=Y.max())(Xt)
    assert torch.allclose(ei, LogExpectedImprovement(ref, best_f=Y.max())(Xt))
    Xn, Yn = _data(4, 8)
    cond, cond_ref = (m.condition_on_observations(Xn, Yn) for m in (model, ref))
    _assert_same_posterior(cond, cond_ref)
    cond.clear_posterior_state()  # rebuilt from the statistics and the new rows
    _assert_same_posterior(cond, cond_ref)
    sampler = SobolQMCNormalSampler(torch.Size([3]), seed=0)
    fant = model.fantasize(Xn[:2], sampler)
    sampler = SobolQMCNormalSampler(torch.Size([3]), seed=0)
    fant_ref = ref.fantasize(Xn[:2], sampler)
    _assert_same_posterior(fant, fant_ref)
    # Its hyperparameters are frozen with its statistics.
    with pytest.raises(UnsupportedError, match="Rebuild"):
        model.custom_fit(None)


def test_file_callable_and_dataset_shards_sum_like_references(built, tmp_path):
    X, Y, parts, model = built
    (X0, Y0), (X1, Y1), (X2, Y2) = parts
    torch.save({"X": X0, "Y": Y0}, tmp_path / "a.pt")
    np.savez(tmp_path / "b.npz", X=X1.numpy(), Y=Y1.numpy())
    np.save(tmp_path / "c.npy", torch.cat([X2, Y2], -1).numpy())
    files = [tmp_path / "a.pt", tmp_path / "b.npz", tmp_path / "c.npy"]
    from_files = rebuild(model, files)
    assert from_files.shard_record.shard_ids[0] == str((tmp_path / "a.pt").resolve())
    _assert_same_posterior(from_files, model, 1e-12)

    class Blocks:  # what the model uses of a ray.data.Dataset (needs pyarrow)
        name = "logs"

        def to_numpy_refs(self):
            return [ray.put({"X": x.numpy(), "Y": y.numpy()}) for x, y in parts]

    from_blocks = rebuild(model, Blocks())
    assert from_blocks.shard_record.shard_ids == ("logs[0]", "logs[1]", "logs[2]")
    _assert_same_posterior(from_blocks, model, 1e-12)
    made = rebuild(model, {"seed-5": partial(_made, 5, 100)})
    Xm, Ym = _data(100, 5)
    _assert_same_posterior(made, _single_process(made, Xm, Ym, False))


def test_a_ray_dataset_sums_like_references(built):
    pytest.importorskip("pyarrow")  # Ray Data's block format
    from ray import data as ray_data

    X, Y, parts, model = built
    rows = [
        {"X": x.numpy(), "Y": y.numpy()}
        for part in parts
        for x, y in zip(*part, strict=True)
    ]
    dataset = ray_data.from_items(rows, override_num_blocks=3)
    dataset.set_name("logs")
    from_dataset = rebuild(model, dataset)
    assert from_dataset.shard_record.num_data == X.shape[0]
    assert from_dataset.shard_record.shard_ids[0].startswith("logs[")
    _assert_same_posterior(from_dataset, model, 1e-10)


def test_adding_a_shard_equals_rebuilding(built):
    X, Y, parts, model = built
    Xn, Yn = _data(120, 3)
    new = ray.put((Xn, Yn))
    refreshed = refresh(model, [new])
    assert refreshed.shard_record.shard_sizes == (250, 300, 150, 120)
    assert model.shard_record.num_data == 700  # unchanged
    everything = [ray.put(p) for p in parts] + [new]
    _assert_same_posterior(refreshed, rebuild(model, everything), 1e-12)
    _assert_same_posterior(
        refreshed,
        _single_process(model, torch.cat([X, Xn]), torch.cat([Y, Yn]), False),
    )
    with pytest.raises(InputDataError, match="summed already"):
        refresh(refreshed, [new])


@pytest.mark.parametrize(
    "bad, message",
    [
        ((torch.rand(5, D + 1, dtype=torch.double), torch.rand(5, 1)), "dimensions"),
        ((torch.full((5, D), float("nan")), torch.rand(5, 1)), "NaN"),
        ((torch.rand(0, D), torch.rand(0, 1)), "empty"),
        ((torch.ones(5, D, dtype=torch.long), torch.rand(5, 1)), "dtype"),
    ],
)
def test_malformed_shards_are_named_and_nothing_is_built(built, bad, message):
    _, _, parts, model = built
    shards = {"good": ray.put(parts[0]), "bad": ray.put(bad)}
    with pytest.raises(InputDataError, match=f"(?s)'bad'.*{message}"):
        refresh(model, shards)
    with pytest.raises(InputDataError, match=message):
        build_sharded_nystrom_gp(shards, fit=False)


def _raises():
    raise ValueError("disk gone")


def _killed_once(marker, rows):
    # Kills its own worker the first time it runs, then returns a shard.
    if not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return _data(rows, 11)


def test_failing_and_killed_workers_raise_or_retry(built, tmp_path):
    _, _, _, model = built
    with pytest.raises(ShardFailedError, match="(?s)'broken'.*disk gone"):
        refresh(model, {"broken": _raises})
    marker = str(tmp_path / "killed-a")
    retried = refresh(model, {"flaky": partial(_killed_once, marker, 50)})
    assert os.path.exists(marker) and retried.shard_record.num_data == 750
    once = {"flaky": partial(_killed_once, str(tmp_path / "killed-b"), 50)}
    with pytest.raises(ShardFailedError, match="worker was lost"):
        refresh(model, once, max_retries=0)


def _changes_after_first_read(marker, rows):
    # The same number of rows each read, other values after the first (a file
    # rewritten between the survey and the statistics pass).
    if not os.path.exists(marker):
        open(marker, "w").close()
        return _data(rows, 12)
    return _data(rows, 13)


@pytest.mark.slow
def test_a_shard_that_changes_between_passes_is_refused(local_ray, tmp_path):
    # Only the row count was compared: the model mixed one read's moments and
    # sample with another read's statistics.
    shards = {
        "steady": partial(_made, 5, 40),
        "drifting": partial(_changes_after_first_read, str(tmp_path / "m"), 40),
    }
    with pytest.raises(ShardFailedError, match="(?s)'drifting'.*changed"):
        build_sharded_nystrom_gp(shards, fit=False)
    # A shard read the same way twice is taken.
    model = build_sharded_nystrom_gp({"steady": partial(_made, 5, 40)}, fit=False)
    assert model.shard_record.num_data == 40


def test_without_ray_the_error_names_the_extra(monkeypatch):
    from botorch_sketch.integrations import ray_statistics

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"botorch-sketch\[ray\]"):
        ray_statistics.build_sharded_nystrom_gp([])


def test_shards_need_ids_and_a_known_format(local_ray, tmp_path):
    with pytest.raises(InputDataError, match="mapping"):
        build_sharded_nystrom_gp([_raises], fit=False)
    (tmp_path / "x.csv").write_text("1,2")
    with pytest.raises(InputDataError, match="no reader"):
        build_sharded_nystrom_gp([tmp_path / "x.csv"], fit=False)
    X, Y = _data(30, 1)
    shard = {"features": {"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "y": Y[:, 0]}}
    cols = ShardFormat(x_columns=("a", "b", "c"), y_column="y")
    model = build_sharded_nystrom_gp(shard, fit=False, shard_format=cols)
    assert model.shard_record.num_data == 30 and model.train_X.shape == (30, D)
