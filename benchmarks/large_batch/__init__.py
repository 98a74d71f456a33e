#!/usr/bin/env python3
r"""Large-budget BO against its real peers (issue 44), in cells that run in parallel.

``python -m benchmarks bo --budget headline [--out DIR]
[--workers 2] [--shard I/K]`` runs every (problem, method, seed) cell of a grid
(:data:`~.grid.GRIDS`) as a single-thread process, ``--workers`` at a time,
and writes each to ``DIR/bo-headline-cells/`` as it finishes (atomically); a cell
already there at the same settings is not run again, so a killed run resumes and
several machines can share a grid (``--shard I/K`` runs every K-th cell).
``python -m benchmarks --collect DIR1 DIR2 --budget headline``
merges the cells of several runs into one report with its figures.

Grids: ``headline`` (q = 100 to 10^4 evaluations on Hartmann-6, Ackley-20,
rover-60 and Levy-100, seeds 0-2: ``run_large_batch`` with each strategy,
TuRBO-ENN, TuRBO-1 capped at 150 CPU s, CMA-ES, CMA-ES from the default's
smaller step (a control) and Sobol),
``headline-shifted`` (Ackley-20 and Levy-100 with their optima moved off the
centre, where CMA-ES starts; no TuRBO-1), ``headline-long`` (q = 1000 to 10^5
on rover-60: the sketches and TuRBO-ENN), ``headline-wide`` (ten more of
BoTorch's test functions that no setting was chosen on), ``headline-check``
(sixteen more, five of them shifted, run after the default's step was chosen)
and ``headline-small`` (seconds, for the tests).

One module per idea: :mod:`~.problems` (the problems, rover-60 among
them), :mod:`~.peers` (the peers' ask/tell adapters and their loop),
:mod:`~.sketch` (``run_large_batch``'s cells), :mod:`~.record` (the fields every
cell records), :mod:`~.grid` (cells, grids, running and reading them) and
:mod:`~.reporting` (tables and figures). The peers need the ``benchmark`` extra
(``ennbo``, ``faiss-cpu``; ``cma`` is the package's own dependency).
"""

from .grid import (
    CMA_ES,
    CMA_ES_SMALL_STEP,
    GRIDS,
    METHODS,
    SOBOL,
    TURBO_ENN,
    TURBO_ONE,
    Cell,
    Grid,
    cells_dir,
    cells_of,
    is_done,
    read_cells,
    run_cell,
    run_grid,
    write_cell,
)
from .peers import CMAES, PEERS, SobolPeer, TurboENN, run_peer
from .problems import PROBLEMS, RoverTrajectory
from .reporting import plot, render, report
from .sketch import EXACT, SKETCH, WarmExactGP, run_sketch

__all__ = [
    "CMAES",
    "CMA_ES",
    "CMA_ES_SMALL_STEP",
    "EXACT",
    "GRIDS",
    "METHODS",
    "PEERS",
    "PROBLEMS",
    "SKETCH",
    "SOBOL",
    "TURBO_ENN",
    "TURBO_ONE",
    "Cell",
    "Grid",
    "RoverTrajectory",
    "SobolPeer",
    "TurboENN",
    "WarmExactGP",
    "cells_dir",
    "cells_of",
    "is_done",
    "plot",
    "read_cells",
    "render",
    "report",
    "run_cell",
    "run_grid",
    "run_peer",
    "run_sketch",
    "write_cell",
]
