r"""One cell of the surrogate-assisted CMA-ES grid: a method on a COCO problem.

A cell minimises a ``bbob`` function (COCO's ``cocoex``) in ``[-5, 5]^d``,
mapped to the unit cube, and records, at evaluation counts on a geometric
grid, the best true value so far minus the function's optimum and the
proposing CPU seconds so far (``time.process_time`` around the method's own
work; the objective is not timed). Every method starts from the cube's centre
with a step of 0.2 of its width (COCO's customary 2 in ``[-5, 5]``).

Methods:
- ``gp``: :class:`~botorch_sketch.bo.SurrogateCMAES` (the GP in CMA-ES's
  metric over lq-CMA-ES's regression, or the regression alone where it ranks
  the recent points at least as well); ``gp-always``: the GP throughout
  (``select=False``); ``gp-lcb``: the same as ``gp`` with ``kappa=1``
  (which orders evaluations only below a batch of a whole population);
- ``lq``: the same pipeline with the regression alone (``residual=False``);
- ``lq-cma-es``: ``cma.fmin_lq_surr2`` as shipped (sequential; IPOP restarts);
- ``cma-es``: ``cma``'s CMA-ES with IPOP restarts (population ``q`` for
  ``q > 1``, its default for ``q = 1``);
- ``turbo-enn``: TuRBO-ENN of ``ennbo`` (``num_init``: ``2 d`` for ``q = 1``, else
  ``q``: its batch size is fixed by its first ``ask``);
- ``screened``: :class:`~botorch_sketch.bo.ScreenedCMAES`, CMA-ES screened by
  the carried sparse GP (``q >= 2``).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

#: Each setting: batch size, evaluations, methods.
SETTINGS = {
    "q1": (1, 2000, ("gp", "lq", "lq-cma-es", "cma-es", "turbo-enn")),
    "q100": (100, 10_000, ("gp", "lq", "cma-es", "turbo-enn", "screened")),
    # rover-60 and Levy-100 (``--functions`` does not apply; ``--dims`` is ignored).
    "high": (100, 10_000, ("gp", "lq", "cma-es", "turbo-enn", "screened")),
}
#: The problems of the ``high`` setting.
HIGH = ("rover60", "levy100")
METHODS = (
    "gp",
    "gp-lcb",
    "gp-always",
    "lq",
    "lq-cma-es",
    "cma-es",
    "turbo-enn",
    "screened",
)
SIGMA0 = 0.2


class Problem:
    r"""A ``bbob`` function on the unit cube, minimised, with its optimum."""

    def __init__(self, function: int, dim: int, instance: int) -> None:
        r"""Build ``bbob`` function ``function`` in ``dim`` dimensions."""
        import cocoex

        options = (
            f"function_indices:{function} dimensions:{dim} instance_indices:{instance}"
        )
        self._problem = cocoex.Suite("bbob", "", options)[0]
        self.name = self._problem.id
        self.dim = dim
        self.lower = np.asarray(self._problem.lower_bounds)
        self.width = np.asarray(self._problem.upper_bounds) - self.lower
        self.optimum = self._optimum()
        self.values: list[float] = []

    def _optimum(self) -> float:
        # cocoex exposes the optimum only through a file its testing method
        # writes; f there is the optimum (checked against perturbed points).
        here = os.getcwd()
        with tempfile.TemporaryDirectory() as folder:
            os.chdir(folder)
            try:
                self._problem._best_parameter("print")
                x = np.loadtxt("._bbob_problem_best_parameter.txt", ndmin=1)
            finally:
                os.chdir(here)
        return float(self._problem(x))

    def __call__(self, unit: np.ndarray) -> float:
        r"""The value at a point of the unit cube (recorded)."""
        value = float(self._problem(self.lower + np.clip(unit, 0, 1) * self.width))
        self.values.append(value)
        return value


class BoTorchProblem:
    r"""A maximised BoTorch problem in ``[0, 1]^d``, minimised as ``-f``.

    ``"rover60"``: the 60-D rover trajectory (reward at most 5: the regret is
    ``5 - reward``); ``"levy100"``: Levy in 100 dimensions (optimum 0).
    """

    def __init__(self, name: str) -> None:
        r"""Build the problem called ``name``."""
        from botorch.test_functions import Levy

        from botorch_sketch.test_functions import RoverTrajectory

        if name == "rover60":
            self._f, self.optimum = RoverTrajectory(negate=False), -5.0
        elif name == "levy100":
            self._f, self.optimum = Levy(dim=100, negate=True), 0.0
        else:
            raise ValueError(f"unknown problem {name!r}")
        self.name, self.dim = name, self._f.dim
        self._bounds = self._f.bounds.double()
        self.values: list[float] = []

    def __call__(self, unit: np.ndarray) -> float:
        r"""``-f`` at a point of the unit cube (recorded)."""
        x = torch.as_tensor(np.clip(unit, 0, 1), dtype=torch.double)
        x = self._bounds[0] + x * (self._bounds[1] - self._bounds[0])
        with torch.no_grad():
            value = -float(self._f(x[None], noise=False))
        self.values.append(value)
        return value


def record_points(budget: int) -> np.ndarray:
    r"""The evaluation counts a cell records (geometric, plus round numbers)."""
    grid = np.unique(np.geomspace(1, budget, 120).astype(int))
    extra = [c for c in (100, 300, 500, 1000, 2000, 3000, 5000, 10_000) if c <= budget]
    return np.unique(np.concatenate([grid, extra, [budget]]).astype(int))


def _ask_tell(problem: Problem, optimizer: Any, budget: int, q: int) -> list[float]:
    # Drive an ask/tell optimizer (unit cube, minimised values) in batches of
    # q; returns the cumulative proposing CPU after each evaluation.
    cpu: list[float] = []
    spent = 0.0
    while len(problem.values) < budget:
        start = time.process_time()
        X = optimizer.ask(min(q, budget - len(problem.values)))
        spent += time.process_time() - start
        y = np.array([problem(x) for x in X])
        start = time.process_time()
        optimizer.tell(X, y)
        spent += time.process_time() - start
        cpu.extend([spent] * len(y))
    return cpu


class _Surrogate:
    # SurrogateCMAES in the unit cube, told minimised values.
    def __init__(self, dim: int, q: int, seed: int, **options: Any) -> None:
        from botorch_sketch.bo import SurrogateCMAES

        bounds = torch.stack([torch.zeros(dim), torch.ones(dim)]).double()
        self.optimizer = SurrogateCMAES(
            bounds, q=q, sigma0=SIGMA0, seed=seed, **options
        )

    def ask(self, n: int) -> np.ndarray:
        return self.optimizer.ask(n).numpy()

    def tell(self, X: np.ndarray, y: np.ndarray) -> None:
        self.optimizer.tell(torch.as_tensor(X), -torch.as_tensor(y))


class _Screened(_Surrogate):
    def __init__(self, dim: int, q: int, seed: int) -> None:
        from botorch_sketch.bo import ScreenedCMAES

        bounds = torch.stack([torch.zeros(dim), torch.ones(dim)]).double()
        self.optimizer = ScreenedCMAES(bounds, q=q, seed=seed)


class _CMAES:
    # IPOP CMA-ES handing out its generations q points at a time.
    def __init__(self, dim: int, q: int, seed: int) -> None:
        import cma

        self._cma, self.dim, self.q = cma, dim, q
        self._rng = np.random.default_rng(seed)
        self.popsize = None if q == 1 else q
        self._es = self._search(np.full(dim, 0.5))
        self._X: list[np.ndarray] = []
        self._y: list[float] = []
        self._served = 0

    def _search(self, x0: np.ndarray) -> Any:
        options = {
            "bounds": [0, 1],
            "seed": int(self._rng.integers(1, 2**31 - 1)),
            "verbose": -9,
        }
        if self.popsize:
            options["popsize"] = self.popsize
        return self._cma.CMAEvolutionStrategy(x0, SIGMA0, options)

    def ask(self, n: int) -> np.ndarray:
        if self._served == len(self._X):
            if self._es.stop():
                self.popsize = 2 * self._es.sp.popsize
                self._es = self._search(self._rng.uniform(size=self.dim))
            self._X, self._y, self._served = list(self._es.ask()), [], 0
        n = min(n, len(self._X) - self._served)
        self._served += n
        return np.stack(self._X[self._served - n : self._served])

    def tell(self, X: np.ndarray, y: np.ndarray) -> None:
        self._y.extend(y.tolist())
        if len(self._y) == len(self._X):
            self._es.tell(self._X, self._y)


class _TurboENN:
    def __init__(self, dim: int, q: int, seed: int) -> None:
        from enn import create_optimizer, turbo_enn_config

        self.q = q
        self._optimizer = create_optimizer(
            bounds=np.array([[0.0, 1.0]] * dim),
            config=turbo_enn_config(num_init=2 * dim if q == 1 else q),
            rng=np.random.default_rng(seed),
        )

    def ask(self, n: int) -> np.ndarray:
        return np.clip(self._optimizer.ask(self.q)[:n], 0.0, 1.0)

    def tell(self, X: np.ndarray, y: np.ndarray) -> None:
        self._optimizer.tell(X, -y)  # ennbo maximises


def _lq_cma_es(problem: Problem, budget: int, seed: int) -> list[float]:
    # cma.fmin_lq_surr2 as shipped; its CPU less the objective's.
    import cma

    objective_cpu = [0.0]
    cpu: list[float] = []
    begin = time.process_time()

    def f(x: np.ndarray) -> float:
        start = time.process_time()
        if len(problem.values) >= budget:  # lq-CMA-ES may overshoot in a population
            return math.nan
        value = problem(np.asarray(x))
        objective_cpu[0] += time.process_time() - start
        cpu.append(time.process_time() - begin - objective_cpu[0])
        return value

    options = {
        "maxfevals": budget,
        "bounds": [0, 1],
        "verbose": -9,
        "seed": seed + 1,
    }
    for attempt in range(10):
        try:
            cma.fmin_lq_surr2(f, problem.dim * [0.5], SIGMA0, options, restarts=9)
            break
        except AttributeError as error:
            # pycma 4.5.0 fails at a restart whose model has no optimum yet to
            # inject ('LQModel' object has no attribute '_xopt'); the run goes
            # on from a fresh start on the remaining budget, as a restart would.
            if "_xopt" not in str(error):
                raise
            done = len(problem.values)
            if done >= budget:
                break
            options.update(maxfevals=budget - done, seed=seed + 2 + attempt)
    return cpu


def run_cell(
    method: str, function: int, dim: int, instance: int, q: int, budget: int, seed: int
) -> dict[str, Any]:
    r"""Run ``method`` on one problem; return the cell's record."""
    torch.set_num_threads(1)
    if isinstance(function, str):
        problem = BoTorchProblem(function)
        dim = problem.dim
    else:
        problem = Problem(function, dim, instance)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "lq-cma-es":
            cpu = _lq_cma_es(problem, budget, seed)
        else:
            optimizer = {
                "gp": lambda: _Surrogate(dim, q, seed),
                "gp-lcb": lambda: _Surrogate(dim, q, seed, kappa=1.0),
                "gp-always": lambda: _Surrogate(dim, q, seed, select=False),
                "lq": lambda: _Surrogate(dim, q, seed, residual=False),
                "cma-es": lambda: _CMAES(dim, q, seed),
                "turbo-enn": lambda: _TurboENN(dim, q, seed),
                "screened": lambda: _Screened(dim, q, seed),
            }[method]()
            cpu = _ask_tell(problem, optimizer, budget, q)
    values = np.asarray(problem.values[:budget], dtype=float)
    values = np.where(np.isfinite(values), values, np.inf)
    best = np.minimum.accumulate(values) - problem.optimum
    counts = record_points(budget)
    counts = counts[counts <= len(best)]
    return {
        "method": method,
        "function": function,
        "dim": dim,
        "instance": instance,
        "q": q,
        "budget": budget,
        "seed": seed,
        "problem": problem.name,
        "optimum": problem.optimum,
        "evaluations": counts.tolist(),
        "regret": best[counts - 1].tolist(),
        "cpu": np.asarray(cpu)[counts - 1].tolist(),
    }


def cell_path(out: Path, setting: str, cell: tuple) -> Path:
    r"""The record's file of ``(method, function, dim, instance)`` in ``setting``."""
    method, function, dim, instance = cell
    label = function if isinstance(function, str) else f"f{function:02d}-d{dim}"
    return Path(out) / f"{setting}-{method}-{label}-i{instance}.json"


def run_and_write(job: tuple) -> str:
    r"""Run ``(out, setting, cell, budget)`` (seeded by the instance); write it.

    ``budget`` None is the setting's.
    """
    out, setting, cell, budget = job
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    method, function, dim, instance = cell
    q, default, _ = SETTINGS[setting]
    budget = default if budget is None else budget
    record = run_cell(method, function, dim, instance, q, budget, seed=instance)
    record["setting"] = setting
    path = cell_path(out, setting, cell)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record))
    tmp.replace(path)
    return path.name
