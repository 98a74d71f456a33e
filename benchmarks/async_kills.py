#!/usr/bin/env python3
r"""SIGKILL a resumable ask/tell run at random moments and audit its final data.

``python -m benchmarks.async_kills --budget large --out DIR``
writes ``DIR/async-kills-BUDGET.md``. Each part runs a driver in a subprocess
(this module with ``--child``) that resumes from its checkpoint if there is
one, kills it by SIGKILL ``kills`` times and restarts it, then lets it finish:

- **sync**: the ask/tell loop of :class:`~botorch_sketch.bo.LargeBatchOptimizer`
  on Hartmann-6: ask ``q`` points, save, evaluate and tell them in chunks in a
  shuffled order, saving after every chunk;
- **ray**: :func:`~botorch_sketch.integrations.ray_async.run_on_ray` with a
  checkpoint (saved after every round), on a local Ray instance
  (``num_cpus=2``) whose workers sleep a short exponential time per point;
- **sync-lazy** (``--budget lazy``): the sync loop without the save after its
  ask, so that points asked since the last save are in no checkpoint.

Budgets: ``small`` (sync to 300 with 3 kills, ray to 120 with 2), ``large``
(sync to 5000 with 10 kills, ray to 1000 with 3), ``lazy`` (sync-lazy to 5000
with 10 kills); ``--skip sync`` or ``--skip ray`` leaves a part out, ``--seed``
seeds the kills.

The kills come once the run's saved results pass targets spread over the run
(drawn from a seeded generator), each of one kind, in a seeded order: after a
random delay (cut short when the saved results reach the end of the
kill's stratum), the moment the checkpoint's mtime changes, or while a checkpoint
is being written (its temporary file exists). Every point is keyed by its
float64 bytes. The driver appends to an independent log, flushed and fsynced:
``ask`` after the save that makes an asked point pending, ``eval`` from the
objective's side (on the Ray workers for the Ray part), ``told`` after each
``tell``, ``saved N`` after each checkpoint. At the end the audit checks, from
the log against the final checkpoint:

- every point told in any process is in the final data, with the logged
  value (``missing`` must be 0), and the final data has no point twice
  (``duplicates`` must be 0), and none told and saved twice across processes;
- the final data reaches the run's size, and every checkpoint read after a
  kill loads;
- evaluations lost (evaluated, not in a checkpoint at the kill) and, of those,
  how many were proposed again after the resume (and of the lost points that
  were not even pending in that checkpoint, how many).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import torch
from botorch.test_functions import Hartmann
from botorch.utils.transforms import unnormalize

from botorch_sketch.bo import LargeBatchOptimizer
from botorch_sketch.bo.checkpoint import CheckpointError, load_checkpoint

#: The kinds of kill, drawn in turn (shuffled).
KINDS = ("delay", "after save", "during save")


@dataclass(frozen=True)
class Part:
    r"""One driver's run: which loop, its size, kills and settings."""

    driver: str  # "sync", "sync-lazy" (no save after an ask) or "ray"
    evaluations: int
    kills: int
    q: int
    chunk: int = 10  # sync: results told (and saved) at a time
    workers: int = 4  # ray
    mean_seconds: float = 0.02  # ray: the workers' mean sleep per point


@dataclass(frozen=True)
class Budget:
    r"""The parts a budget runs."""

    parts: tuple[Part, ...]


BUDGETS = {
    "small": Budget((Part("sync", 300, 3, q=50), Part("ray", 120, 2, q=4))),
    "large": Budget((Part("sync", 5000, 10, q=100), Part("ray", 1000, 3, q=4))),
    # A driver that saves only after its tells: the points asked since the
    # last save are in no checkpoint, and a resume must propose them again.
    "lazy": Budget((Part("sync-lazy", 5000, 10, q=100),)),
}

CHECKPOINT = "run.pt"
LOG = "told.log"


def key(x: torch.Tensor) -> str:
    r"""A point's float64 bytes, as hex."""
    return x.detach().to(torch.double).contiguous().numpy().tobytes().hex()


def _append(path: Path, lines: list[str]) -> None:
    # One write with O_APPEND (lines of different processes do not tear), fsynced.
    if not lines:
        return
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, "".join(line + "\n" for line in lines).encode())
        os.fsync(fd)
    finally:
        os.close(fd)


# ------------------------------------------------------------------ drivers


class _Objective:
    # Hartmann-6 (negated), logging each evaluation; on Ray it sleeps first.

    def __init__(self, log: Path, mean_seconds: float = 0.0) -> None:
        self.log, self.mean_seconds = log, mean_seconds
        self.f = Hartmann(dim=6, negate=True)

    def __call__(self, X: torch.Tensor) -> torch.Tensor:
        if self.mean_seconds > 0:
            rng = random.Random(key(X))
            time.sleep(rng.expovariate(1.0 / self.mean_seconds))
        Y = self.f(X)
        _append(
            self.log, [f"eval {key(x)} {float(y)!r}" for x, y in zip(X, Y, strict=True)]
        )
        return Y


class _LoggedOptimizer(LargeBatchOptimizer):
    # Logs its tells and saves (and asks, for the Ray driver).

    journal: Path | None = None
    log_asks = False

    def ask(self, n: int = 1) -> torch.Tensor:
        X = super().ask(n)
        if self.log_asks:
            _append(self.journal, [f"ask {key(x)}" for x in X])
        return X

    def tell(self, X, Y, failed=None) -> None:
        super().tell(X, Y, failed)
        _append(self.journal, [f"told {key(x)}" for x in X])

    def save(self, path) -> None:
        super().save(path)
        _append(self.journal, [f"saved {self.num_told}"])


def _settings(part: Part) -> dict:
    return {"q": part.q, "seed": 0}


def _resume(part: Part, directory: Path) -> _LoggedOptimizer:
    bounds = Hartmann(dim=6).bounds
    path = directory / CHECKPOINT
    if path.exists():
        optimizer = _LoggedOptimizer.load(path, bounds, **_settings(part))
    else:
        optimizer = _LoggedOptimizer(bounds, **_settings(part))
    optimizer.journal = directory / LOG
    _append(optimizer.journal, [f"start {os.getpid()} {optimizer.num_told}"])
    return optimizer


def drive_sync(part: Part, directory: Path) -> int:
    r"""The synchronous ask/tell loop, resumed from its checkpoint if any.

    Args:
        part: The run's settings.
        directory: Holds the checkpoint and the log.

    Returns:
        The results told at the end.
    """
    optimizer = _resume(part, directory)
    f = _Objective(optimizer.journal)
    path = directory / CHECKPOINT
    while optimizer.num_told < part.evaluations:
        X = optimizer.ask(min(part.q, part.evaluations - optimizer.num_told))
        if part.driver == "sync":
            optimizer.save(path)  # the asked points are pending in the checkpoint
        _append(optimizer.journal, [f"ask {key(x)}" for x in X])
        order = torch.randperm(
            X.shape[0], generator=torch.Generator().manual_seed(optimizer.num_told)
        )
        for chunk in X[order].split(part.chunk):
            optimizer.tell(chunk, f(chunk))
            optimizer.save(path)
    return optimizer.num_told


def drive_ray(part: Part, directory: Path) -> int:
    r"""``run_on_ray`` with a checkpoint, resumed from it if any.

    Args:
        part: The run's settings.
        directory: Holds the checkpoint and the log.

    Returns:
        The results told at the end.
    """
    import ray

    from botorch_sketch.integrations.ray_async import run_on_ray

    optimizer = _resume(part, directory)
    optimizer.log_asks = True
    remaining = part.evaluations - optimizer.num_told
    if remaining <= 0:
        return optimizer.num_told
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        run_on_ray(
            optimizer,
            _Objective(optimizer.journal, part.mean_seconds),
            workers=part.workers,
            evaluations=remaining,
            queue=2,
            checkpoint=directory / CHECKPOINT,
            worker_options={"num_cpus": 0},
            progress=False,
        )
    finally:
        ray.shutdown()
    return optimizer.num_told


# ------------------------------------------------------------------ harness


@dataclass
class KillRun:
    r"""What a killed and resumed run did, and its audit."""

    part: Part
    seed: int = 0
    kills: list[str] = field(default_factory=list)
    unreadable: int = 0
    temporary_files: int = 0
    mid_write: int = 0
    evaluations: int = 0
    final: int = 0
    lost: int = 0
    told_unsaved: int = 0
    lost_fresh: int = 0
    reproposed_fresh: int = 0
    reproposed: int = 0
    duplicates: int = 0
    missing: int = 0
    wrong_values: int = 0
    saved_twice: int = 0
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        r"""Whether the audit passed."""
        return (
            self.duplicates == self.missing == self.wrong_values == 0
            and self.saved_twice == self.unreadable == 0
            and self.final == self.part.evaluations
        )


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class _Progress:
    # The largest ``saved N`` in the log so far (the run's durable progress),
    # read incrementally.

    def __init__(self, log: Path) -> None:
        self.log, self.offset, self.rest = log, 0, b""
        self.saved = self.starts = 0

    def __call__(self) -> int:
        if self.log.exists():
            with open(self.log, "rb") as f:
                f.seek(self.offset)
                data = self.rest + f.read()
                self.offset = f.tell()
            *lines, self.rest = data.split(b"\n")
            for line in lines:
                if line.startswith(b"saved "):
                    self.saved = max(self.saved, int(line.split()[1]))
                self.starts += line.startswith(b"start ")
        return self.saved


def _kill_when(
    child,
    kind: str,
    directory: Path,
    rng: random.Random,
    progress: _Progress,
    limit: int,
) -> bool:
    # Waits for the moment of ``kind``; kills the child then. False if it ended.
    # A delay ends early once the saved results reach ``limit`` (the end of the
    # kill's stratum): on a fast machine a second is the rest of a small run.
    path = directory / CHECKPOINT
    if kind == "delay":
        deadline = time.monotonic() + rng.uniform(0.0, 1.0)
        while time.monotonic() < deadline and progress() < limit:
            if child.poll() is not None:
                return False
            time.sleep(0.005)
    elif kind == "after save":
        before = path.stat().st_mtime_ns if path.exists() else 0
        while not path.exists() or path.stat().st_mtime_ns == before:
            if child.poll() is not None:
                return False
            time.sleep(0.0005)
    else:  # during save: the temporary file exists
        prefix = f".{CHECKPOINT}."
        while not any(
            e.name.startswith(prefix) and e.name.endswith(".tmp")
            for e in os.scandir(directory)
        ):
            if child.poll() is not None:
                return False
    if child.poll() is not None:
        return False
    os.killpg(child.pid, signal.SIGKILL)  # the driver and any Ray it started
    return True


def run(part: Part, seed: int = 0, directory: Path | None = None) -> KillRun:
    r"""Kill ``part``'s driver at random moments, resume it, and audit the data.

    Args:
        part: The run.
        seed: Seeds the kills' targets, kinds and delays.
        directory: Where the checkpoint and log go (default a temporary one).

    Returns:
        The :class:`KillRun`.
    """
    if directory is None:
        with tempfile.TemporaryDirectory() as tmp:
            return run(part, seed, Path(tmp))
    rng = random.Random(seed)
    out = KillRun(part, seed)
    n, k = part.evaluations, part.kills
    # One target per stratum of the run, so the kills spread over it.
    targets = [int(n * (i + rng.uniform(0.1, 0.9)) / (k + 1)) for i in range(k)]
    kinds = [KINDS[i % len(KINDS)] for i in range(k)]
    rng.shuffle(kinds)
    args = [
        sys.executable,
        "-m",
        "benchmarks.async_kills",
        "--child",
        part.driver,
        str(directory),
        str(n),
        str(part.kills),
        str(part.q),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    progress = _Progress(directory / LOG)
    after_kills: dict[int, set[str]] = {}
    pending: dict[int, set[str]] = {}
    cpu, wall = _children_cpu(), time.perf_counter()
    for i, (target, kind) in enumerate(zip(targets, kinds, strict=True)):
        child = subprocess.Popen(
            args, env=env, stdout=subprocess.DEVNULL, start_new_session=True
        )
        while child.poll() is None and progress() < target:
            time.sleep(0.01)
        before = _temporary(directory)
        limit = n * (i + 1) // (k + 1)
        if _kill_when(child, kind, directory, rng, progress, limit):
            child.wait()
            out.kills.append(kind)
            # The kill left a half-written temporary file: it came mid-write.
            out.mid_write += _temporary(directory) > before
        elif child.wait() != 0:
            raise RuntimeError(f"A {part.driver} driver failed ({child.returncode}).")
        with _quiet_killpg():
            os.killpg(child.pid, signal.SIGKILL)  # leftovers of the group, if any
        if (directory / CHECKPOINT).exists():
            try:
                state = load_checkpoint(directory / CHECKPOINT)
            except CheckpointError:
                out.unreadable += 1
            else:
                progress()  # the log up to the kill: which process it was
                after_kills[progress.starts - 1] = set(_keys(state))
                pending[progress.starts - 1] = {key(x) for x in state["pending_raw"]}
    child = subprocess.Popen(
        args, env=env, stdout=subprocess.DEVNULL, start_new_session=True
    )
    code = child.wait()
    with _quiet_killpg():
        os.killpg(child.pid, signal.SIGKILL)
    if code != 0:
        raise RuntimeError(f"The last {part.driver} driver failed ({code}).")
    out.cpu_seconds = _children_cpu() - cpu
    out.wall_seconds = time.perf_counter() - wall
    out.temporary_files = _temporary(directory)
    audit(out, directory, after_kills, pending)
    return out


def _temporary(directory: Path) -> int:
    # Temporary files of checkpoint writes in the folder.
    return sum(e.name.endswith(".tmp") for e in os.scandir(directory))


class _quiet_killpg:
    # Ignores a process group that is already gone.
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, value, tb) -> bool:
        return kind is ProcessLookupError or kind is PermissionError


def _keys(state: dict) -> list[str]:
    # The points told in a checkpoint's state, keyed as the log keys them.
    return [key(x) for x in unnormalize(state["told_X"], state["config"]["bounds"])]


def audit(
    out: KillRun,
    directory: Path,
    after_kills: dict[int, set[str]],
    pending: dict[int, set[str]] | None = None,
) -> None:
    r"""Check the final checkpoint against the log; fill ``out``'s counts.

    Args:
        out: The run's record.
        directory: Holds the checkpoint and the log.
        after_kills: The points in the checkpoint read after each kill, by the
            index of the process killed (its ``start`` line's).
        pending: The points pending in those checkpoints, by the same index.
    """
    state = load_checkpoint(directory / CHECKPOINT)
    final = _keys(state)
    values = dict(zip(final, state["told_Y"].reshape(-1).tolist(), strict=True))
    out.final = len(final)
    out.duplicates = len(final) - len(set(final))
    # The log, in processes: each from its ``start`` line.
    segments: list[list[tuple[str, str]]] = []
    evaluated: dict[str, float] = {}
    for line in (directory / LOG).read_text().splitlines():
        word, _, rest = line.partition(" ")
        if word == "start":
            segments.append([])
        elif word == "eval":
            x, y = rest.split()
            out.evaluations += 1
            evaluated[x] = float(y)
        segments[-1].append((word, rest))
    told = {x for seg in segments for w, x in seg if w == "told"}
    durable = set().union(*after_kills.values()) if after_kills else set()
    out.missing = len((told | durable) - set(final))
    out.wrong_values = sum(
        1 for x, y in values.items() if x not in evaluated or evaluated[x] != y
    )
    lost: list[str] = []
    fresh: list[str] = []  # lost, and not pending in the checkpoint either
    saved_before: set[str] = set()
    for i, seg in enumerate(segments):
        # Told here although a checkpoint after an earlier kill held it.
        out.saved_twice += sum(w == "told" and x in saved_before for w, x in seg)
        if i in after_kills:
            saved = after_kills[i]
            # Evaluated in this (killed) process, not in the checkpoint at the kill.
            here = [r.split()[0] for w, r in seg if w == "eval"]
            lost += [x for x in here if x not in saved]
            held = (pending or {}).get(i, set())
            fresh += [x for x in here if x not in saved and x not in held]
            told_here = {x for w, x in seg if w == "told"}
            out.told_unsaved += sum(x in told_here for x in here if x not in saved)
            saved_before |= saved
    out.lost = len(lost)
    asked = [
        {x for w, x in seg if w == "ask"} for i, seg in enumerate(segments) if i > 0
    ]
    asked_after = set().union(*asked) if asked else set()
    out.reproposed = sum(x in asked_after for x in lost)
    out.lost_fresh = len(fresh)
    out.reproposed_fresh = sum(x in asked_after for x in fresh)


# ------------------------------------------------------------------ report


def render(budget: str, runs: list[KillRun]) -> str:
    r"""The report's markdown."""
    lines = [
        f"# SIGKILL at random moments, resumed from the checkpoint ({budget})",
        "",
        f"Command: `python -m benchmarks.async_kills --budget {budget}`.",
        "",
        "| driver | seed | evaluations | kills (delay / after save / during save; "
        "mid-write) | evaluated | lost at kills (told, not saved) | re-proposed "
        "(of the lost in no checkpoint) | "
        "duplicates | missing | wrong values | told again once saved | unreadable "
        "checkpoints | CPU s | wall s | ok |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        c = Counter(r.kills)
        kinds = " / ".join(str(c[k]) for k in KINDS)
        lines.append(
            f"| {r.part.driver} (q = {r.part.q}) | {r.seed} | {r.final} of "
            f"{r.part.evaluations} | {len(r.kills)} ({kinds}; {r.mid_write}) | "
            f"{r.evaluations} | {r.lost} ({r.told_unsaved}) | {r.reproposed} "
            f"({r.reproposed_fresh} of {r.lost_fresh}) | "
            f"{r.duplicates} | {r.missing} | "
            f"{r.wrong_values} | {r.saved_twice} | {r.unreadable} | "
            f"{r.cpu_seconds:.0f} | {r.wall_seconds:.0f} | "
            f"{'yes' if r.ok else 'NO'} |"
        )
    stale = {r.part.driver: r.temporary_files for r in runs if r.temporary_files}
    if stale:
        lines += [
            "",
            "Half-written temporary files of checkpoints being written at a kill, "
            f"left in the run's folder at the end: {stale} (the checkpoint itself "
            "was never torn).",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    r"""Run the budget's parts and write the report (or be a driver)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", choices=sorted(BUDGETS), default="small")
    parser.add_argument("--out", default=".")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip", nargs="*", default=[], help="sync ray")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    if args.child:
        driver, directory, n, kills, q = args.child
        # By the package's name, so that Ray's workers can import the objective.
        from benchmarks import async_kills

        part = async_kills.Part(driver, int(n), int(kills), q=int(q))
        drive = async_kills.drive_ray if driver == "ray" else async_kills.drive_sync
        print("done", drive(part, Path(directory)))
        return 0
    runs = [
        run(part, seed=args.seed)
        for part in BUDGETS[args.budget].parts
        if part.driver not in args.skip
    ]
    text = render(args.budget, runs)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"async-kills-{args.budget}.md").write_text(text)
    print(text)
    return 0 if all(r.ok for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
