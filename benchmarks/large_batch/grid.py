#!/usr/bin/env python3
r"""The grids: cells run as parallel single-thread processes, each written once.

A cell is one (problem, method, seed) run at a budget's settings. Its file name
(:attr:`Cell.key`) holds the budget's name and every setting, and a cell on
disk counts as done only if its recorded settings are the cell's: a small
budget's cells are never read as a larger one's.
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import torch

from .peers import PEERS, run_peer
from .problems import CHECK_PROBLEMS, PROBLEMS, WIDE_PROBLEMS
from .sketch import EXACT, SKETCH, SKETCH_CMA, run_sketch

TURBO_ENN, TURBO_ONE, CMA_ES, SOBOL = "TuRBO-ENN", "TuRBO-1", "CMA-ES", "Sobol"
#: CMA-ES from sketch-CMA's initial step (0.1, not the peer's 0.2): a control,
#: not a peer; sketch-CMA against it is what the model's screening adds.
CMA_ES_SMALL_STEP = "CMA-ES-0.1"
#: Every method, in the report's order.
METHODS = [
    SKETCH,
    SKETCH_CMA,
    TURBO_ENN,
    TURBO_ONE,
    CMA_ES,
    CMA_ES_SMALL_STEP,
    SOBOL,
    EXACT,
]
#: The headline grid's problems.
HEADLINE_PROBLEMS = ["Hartmann-6", "Ackley-20", "rover-60", "Levy-100"]
#: CPU seconds of proposing after which a headline cell stops. TuRBO-1 (an
#: exact GP refitted each batch) is capped by design; the others' caps only
#: bound a run that goes wrong.
HEADLINE_CAPS: dict[str, float | None] = {
    SKETCH: 1800.0,
    SKETCH_CMA: 1800.0,
    TURBO_ENN: 1800.0,
    TURBO_ONE: 100.0,
    CMA_ES: 1800.0,
    CMA_ES_SMALL_STEP: 1800.0,
    SOBOL: None,
    EXACT: 150.0,
}
#: Rough proposing CPU seconds per evaluation, to start the longest cells first.
_PER_EVALUATION = {
    SKETCH: 0.1,
    SKETCH_CMA: 0.05,
    TURBO_ENN: 2e-3,
    TURBO_ONE: 0.1,
    CMA_ES: 5e-4,
    CMA_ES_SMALL_STEP: 5e-4,
    SOBOL: 1e-5,
    EXACT: 0.05,
}


@dataclass(frozen=True)
class Cell:
    r"""One run of a grid.

    Attributes:
        budget: The grid's name (a key of :data:`GRIDS`).
        problem: A name of :data:`~.problems.PROBLEMS`.
        method: A name of :data:`METHODS`.
        seed: The run's seed.
        evaluations: Evaluations in all.
        q: Points per batch.
        time_cap: CPU seconds of proposing after which the run stops (None:
            never).
    """

    budget: str
    problem: str
    method: str
    seed: int
    evaluations: int
    q: int
    time_cap: float | None = None

    @property
    def key(self) -> str:
        r"""The cell's file name (without ``.json``): its budget and settings."""
        cap = "none" if self.time_cap is None else f"{self.time_cap:g}"
        name = (
            f"{self.budget}__{self.problem}__{self.method}__q{self.q}"
            f"-n{self.evaluations}-cap{cap}__seed{self.seed}"
        )
        return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)

    @property
    def expected_seconds(self) -> float:
        r"""A rough guess of the cell's CPU seconds (the longest start first)."""
        guess = _PER_EVALUATION.get(self.method, 0.1) * self.evaluations
        return guess if self.time_cap is None else min(guess, self.time_cap)


@dataclass
class Grid:
    r"""A budget: its cells."""

    cells: list[Cell] = field(default_factory=list)


def make_cells(
    budget: str,
    problems: list[str],
    methods: list[str],
    seeds: list[int],
    evaluations: int,
    q: int,
    caps: dict[str, float | None],
) -> list[Cell]:
    r"""Every (problem, seed, method) cell of a budget, ``caps`` by method."""
    return [
        Cell(budget, p, m, s, evaluations, q, caps.get(m))
        for p in problems
        for s in seeds
        for m in methods
    ]


def _headline_grid(budget: str, problems: list[str], methods: list[str]) -> Grid:
    # The headline grids' shared settings: q = 100 to 10^4 evaluations, seeds
    # 0-2, the headline caps.
    return Grid(
        make_cells(
            budget,
            problems,
            methods,
            [0, 1, 2],
            evaluations=10_000,
            q=100,
            caps=HEADLINE_CAPS,
        )
    )


GRIDS: dict[str, Grid] = {
    # Seconds: every method once on Hartmann-6 (what the tests run).
    "headline-small": Grid(
        make_cells(
            "headline-small",
            ["Hartmann-6"],
            METHODS,
            [0],
            evaluations=40,
            q=10,
            caps=dict.fromkeys(METHODS, 30.0),
        )
    ),
    # q = 100 to 10^4 evaluations, three seeds: the comparison of issue 44.
    "headline": _headline_grid(
        "headline", HEADLINE_PROBLEMS, [m for m in METHODS if m != EXACT]
    ),
    # Ackley-20 and Levy-100 with their optima moved off the centre, where
    # CMA-ES starts: q = 100 to 10^4, three seeds (TuRBO-1 left out: capped at
    # 1000-1300 evaluations, it reads only the first column).
    "headline-shifted": _headline_grid(
        "headline-shifted",
        ["Ackley-20-shifted", "Levy-100-shifted"],
        [SKETCH, SKETCH_CMA, TURBO_ENN, CMA_ES, CMA_ES_SMALL_STEP, SOBOL],
    ),
    # Ten of BoTorch's test functions in 4-60 dimensions that no setting was
    # chosen on: q = 100 to 10^4, three seeds, the sketches beside the peers
    # that reach 10^4 (TuRBO-1 left out: capped, it reads only 1000).
    "headline-wide": _headline_grid(
        "headline-wide",
        WIDE_PROBLEMS,
        [SKETCH, SKETCH_CMA, TURBO_ENN, CMA_ES, CMA_ES_SMALL_STEP],
    ),
    # Sixteen more problems, run after sketch-CMA's initial step (0.1) was
    # chosen on the sixteen above: eleven other BoTorch functions and five with
    # their optima moved off the centre; q = 100 to 10^4, three seeds.
    "headline-check": _headline_grid(
        "headline-check",
        CHECK_PROBLEMS,
        [SKETCH_CMA, TURBO_ENN, CMA_ES, CMA_ES_SMALL_STEP],
    ),
    # One q = 1000 run to 10^5 on rover-60 per sketch, TuRBO-ENN beside them.
    "headline-long": Grid(
        make_cells(
            "headline-long",
            ["rover-60"],
            [SKETCH, SKETCH_CMA, TURBO_ENN],
            [0],
            evaluations=100_000,
            q=1000,
            caps={SKETCH: 3600.0, SKETCH_CMA: 3600.0, TURBO_ENN: 3600.0},
        )
    ),
}


def _one_thread() -> ExitStack:
    # torch, and the BLAS and OpenMP pools numpy, scipy and faiss use, on one
    # thread (threadpoolctl comes with scikit-learn; without it only torch).
    stack = ExitStack()
    torch.set_num_threads(1)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        return stack
    stack.enter_context(threadpool_limits(limits=1))
    return stack


def _run(cell: Cell) -> dict[str, Any]:
    problem = PROBLEMS[cell.problem]()
    if cell.method in (SKETCH, SKETCH_CMA, EXACT):
        return run_sketch(
            problem,
            cell.evaluations,
            cell.q,
            cell.seed,
            time_cap=cell.time_cap,
            method=cell.method,
        )
    peer = PEERS[cell.method](problem.dim, cell.q, cell.seed)
    return run_peer(
        problem, peer, cell.evaluations, cell.q, cell.seed, time_cap=cell.time_cap
    )


def run_cell(cell: Cell, warm_up: bool = True) -> dict[str, Any]:
    r"""Run one cell on one thread and return its record.

    Args:
        cell: The cell.
        warm_up: First run the method untimed for three batches of 4 points on
            the same problem, so that the lazy imports and first calls of the
            packages (a second or more for ``ennbo``'s first ``ask`` and
            ``tell``) are not charged to the cell.
    """
    with _one_thread():
        if warm_up:
            small = min(cell.q, 4)
            _run(replace(cell, evaluations=3 * small, q=small, time_cap=None))
        start = time.process_time()
        fields = _run(cell)
        total = time.process_time() - start
        threads = torch.get_num_threads()
    return {
        "cell": asdict(cell),
        **fields,
        "total_cpu_seconds": total,
        "threads": threads,
    }


def cells_dir(out: str) -> str:
    r"""Where a run writes its cells."""
    return os.path.join(out, "bo-headline-cells")


def write_cell(directory: str, record: dict[str, Any]) -> str:
    r"""Write a cell's record atomically; return its path."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, Cell(**record["cell"]).key + ".json")
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(record, f)
    os.replace(tmp, path)
    return path


def _read(path: str) -> dict[str, Any] | None:
    # A record, or None if the file is not one of this grid's records.
    try:
        with open(path) as f:
            record = json.load(f)
        Cell(**record["cell"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return record


def is_done(directory: str, cell: Cell) -> bool:
    r"""Whether ``directory`` holds ``cell``'s record, run at its settings."""
    record = _read(os.path.join(directory, cell.key + ".json"))
    return record is not None and record["cell"] == asdict(cell)


def run_grid(
    budget: str,
    out: str,
    workers: int = 2,
    shard: tuple[int, int] = (0, 1),
    progress: bool = True,
) -> list[dict[str, Any]]:
    r"""Run the cells of ``budget`` not yet in ``out``, ``workers`` at a time.

    Args:
        budget: A name of :data:`GRIDS`.
        out: The run's folder; cells go to :func:`cells_dir`.
        workers: Processes at once (each single-threaded).
        shard: ``(i, k)``: run only cells ``i, i + k, i + 2k, ...`` of the grid.
        progress: Print each cell as it finishes.

    Returns:
        The records of ``budget``'s cells now in ``out`` (this run's and
        earlier ones).
    """
    directory = cells_dir(out)
    i, k = shard
    todo = [
        c
        for j, c in enumerate(GRIDS[budget].cells)
        if j % k == i and not is_done(directory, c)
    ]
    # Longest first, so that the pool ends together.
    todo.sort(key=lambda c: c.expected_seconds, reverse=True)
    if workers <= 1:
        for cell in todo:
            _done(directory, run_cell(cell), progress)
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(run_cell, cell) for cell in todo]
            for future in as_completed(futures):
                _done(directory, future.result(), progress)
    return cells_of(budget, read_cells([out]))


def _done(directory: str, record: dict[str, Any], progress: bool) -> None:
    write_cell(directory, record)
    if progress:
        cell = record["cell"]
        print(
            f"{cell['budget']} {cell['problem']} {cell['method']} seed "
            f"{cell['seed']}: {record['evaluations'][-1]} evaluations, best "
            f"{record['best_value'][-1]:.4g}, {record['cumulative_seconds'][-1]:.1f} "
            f"CPU s proposing ({record['total_cpu_seconds']:.1f} in all)",
            flush=True,
        )


def read_cells(outs: list[str]) -> list[dict[str, Any]]:
    r"""The records in several runs' folders, each file name once (the first)."""
    records: dict[str, dict[str, Any]] = {}
    for out in outs:
        directory = cells_dir(out)
        if not os.path.isdir(directory):
            continue
        for name in sorted(os.listdir(directory)):
            if name.endswith(".json") and name not in records:
                record = _read(os.path.join(directory, name))
                if record is not None:
                    records[name] = record
    return list(records.values())


def cells_of(budget: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    r"""The records of ``budget``'s cells, run at the cells' settings."""
    wanted = {c.key: asdict(c) for c in GRIDS[budget].cells}
    return [r for r in records if wanted.get(Cell(**r["cell"]).key) == r["cell"]]
