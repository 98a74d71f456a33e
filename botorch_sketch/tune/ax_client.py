#!/usr/bin/env python3
r"""The ``ax.api.Client`` of a run: made from its settings, or from a checkpoint.

A run's client uses :class:`~botorch_sketch.models.NystromGP`
(``model="nystrom"``), :class:`~botorch_sketch.models.GradientSubsetGP`
(``"subset"``) or Ax's default model (``"default"``). Ax is imported on use:
``python -m botorch_sketch.tune --help`` stays fast and a missing Ax gives the
message of :mod:`botorch_sketch.integrations.ax`.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

from botorch.acquisition.logei import qLogExpectedImprovement

from botorch_sketch.acquisition import qBKBUpperConfidenceBound
from botorch_sketch.models import GradientSubsetGP
from botorch_sketch.tune.checkpoint import read_record
from botorch_sketch.tune.config import TuneConfig
from botorch_sketch.tune.errors import TuneError
from botorch_sketch.tune.space import SpaceParam


@contextlib.contextmanager
def quiet_ax() -> Iterator[None]:
    r"""Within the block, silence Ax's log messages below ERROR and all warnings.

    Both are restored on exit, so calling the command in-process (a notebook,
    a test) leaves the caller's logging and warning filters as they were.
    """
    try:
        from ax.utils.common.logger import ROOT_STREAM_HANDLER
    except ImportError:  # --backend optuna needs no Ax
        ROOT_STREAM_HANDLER = logging.NullHandler()
    level = ROOT_STREAM_HANDLER.level
    ROOT_STREAM_HANDLER.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        ROOT_STREAM_HANDLER.setLevel(level)


def _ax() -> tuple[Any, Any]:
    # Ax's Client and this package's Ax integration, imported on use.
    from ax.api.client import Client

    import botorch_sketch.integrations.ax as integration
    import botorch_sketch.integrations.ax_carried  # noqa: F401 (registers its class)

    return Client, integration


def generation_strategy(config: TuneConfig, use_existing_trials: bool = False) -> Any:
    r"""The Ax ``GenerationStrategy`` of a run's settings.

    Args:
        config: The settings (model, acquisition, Sobol trials, optimiser).
        use_existing_trials: Count trials already on the experiment as Sobol
            trials.

    Returns:
        A ``GenerationStrategy``.
    """
    _, integration = _ax()
    options = {
        k: v
        for k, v in (
            ("num_restarts", config.num_restarts),
            ("raw_samples", config.raw_samples),
        )
        if v is not None
    }
    acqf = {
        "auto": None,
        "qlogei": qLogExpectedImprovement,
        "bkb": qBKBUpperConfidenceBound,
    }[config.acquisition]
    common = {
        "num_initial": config.initial,
        "botorch_acqf_class": acqf,
        "optimizer_options": options or None,
        "seed": config.seed,
        "use_existing_trials": use_existing_trials,
    }
    if config.model == "nystrom":
        from botorch_sketch.integrations.ax_carried import CarriedNystromGP

        # Ax refits its model every trial; this one carries its hyperparameters
        # until the data have grown 5%, under a key of this strategy's own.
        return integration.sketch_generation_strategy(
            CarriedNystromGP, model_options={"carry": uuid.uuid4().hex}, **common
        )
    if config.model == "subset":
        options = {"subset_size": config.subset_size, "num_initial": config.initial}
        return integration.sketch_generation_strategy(
            GradientSubsetGP, model_options=options, **common
        )
    return integration.default_generation_strategy(**common)


def ax_parameter(p: SpaceParam) -> Any:
    r"""The Ax parameter config of a search-space parameter (range or choice)."""
    from ax.api.configs import ChoiceParameterConfig, RangeParameterConfig

    if p.kind != "categorical":
        return RangeParameterConfig(
            name=p.name,
            parameter_type=p.kind,
            bounds=(p.low, p.high),
            scaling="log" if p.log else "linear",
        )
    types = {type(c) for c in p.choices}
    kind = {str: "str", bool: "bool", int: "int"}.get(next(iter(types)))
    if types <= {int, float} and types != {int}:
        kind = "float"
    if len(types) > 1 and kind != "float":
        raise TuneError(
            f"parameter {p.name!r}: Ax needs choices of one type (all texts, all "
            f"numbers or all booleans), got {list(p.choices)}"
        )
    return ChoiceParameterConfig(
        name=p.name, parameter_type=kind, values=list(p.choices)
    )


def ax_objective(objectives: Mapping[str, str]) -> str:
    r"""Ax's objective text: ``"-loss"`` to minimise, ``"acc, -loss"`` for two."""
    return ", ".join(("-" if d == "min" else "") + n for n, d in objectives.items())


def new_client(config: TuneConfig) -> Any:
    r"""A new ``ax.api.Client`` for a run: its experiment and generation strategy.

    Raises:
        TuneError: If Ax refuses the search space.
    """
    Client, _ = _ax()
    gs = generation_strategy(config)
    from ax.exceptions.core import UserInputError

    client = Client(random_seed=config.seed)
    try:
        client.configure_experiment(
            name=f"tune-{config.name()}",
            parameters=[ax_parameter(p) for p in config.params()],
        )
    except UserInputError as e:
        # Ax's own limits on a space (e.g. a range narrower than 1.5e-5).
        raise TuneError(f"Ax refuses the search space: {e}") from None
    client.configure_optimization(objective=ax_objective(config.objectives))
    client.set_generation_strategy(generation_strategy=gs)
    return client


def load_checkpoint(path: str) -> tuple[Any, dict[str, Any]]:
    r"""The ``ax.api.Client`` and this run's record from a checkpoint.

    Raises:
        TuneError: If the checkpoint cannot be read or restored.
    """
    _, record = read_record(path)
    Client, _ = _ax()
    try:
        client = Client.load_from_json_file(path)
    except Exception as e:  # Ax raises many kinds on malformed snapshots.
        raise TuneError(
            f"checkpoint {path} could not be restored by Ax ({type(e).__name__}: {e})"
        ) from None
    return client, record
