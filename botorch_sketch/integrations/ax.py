#!/usr/bin/env python3
r"""Ax generation strategies that use this package's models.

``ax.api.Client`` takes a custom model through a ``GenerationStrategy``: Sobol
trials first, then Ax's modular BoTorch generator (``Generators.BOTORCH_MODULAR``)
with a ``ModelConfig`` naming the model class. :func:`sketch_generation_strategy`
builds one for :class:`~botorch_sketch.models.NystromGP` (or another class of this
package), and :func:`default_generation_strategy` the same strategy with Ax's
default model, for side-by-side comparisons.

Both register this package's models and acquisition functions with Ax's JSON
storage, so ``Client.save_to_json_file`` and ``Client.load_from_json_file`` work;
importing this module does the same, so a process that loads a saved client only
has to import it first. Model and acquisition options must then be JSON values
(numbers, strings, lists, dicts), not objects such as inducing selectors.

At a thousand trials and more, Ax's acquisition (``qLogNoisyExpectedImprovement``)
spends much of a trial pruning its baseline by a joint draw over every observed
point, ``O(N^3)`` whatever the model. Pass
``botorch_acqf_class=qLogNEIMarginalBaseline`` (of
:mod:`botorch_sketch.acquisition.baseline`) to choose the baseline from the
model's marginals instead, ``O(N m^2)`` with a ``NystromGP``; its options
(``baseline_k``, ``baseline_max_size``) go in ``botorch_acqf_options``. It is
opt-in: without a ``botorch_acqf_class`` Ax chooses the acquisition as it always
does (``qLogNEHVI`` for several objectives, where the rule does not apply).

Multi-objective experiments take the same strategy: Ax 1.3.1 models several
outcomes with one batched model only for subclasses of BoTorch's
``BatchedMultiOutputGPyTorchModel`` (its ``use_model_list``), so it fits a
``ModelListGP`` of one ``NystromGP`` per objective, each with its own
hyperparameters and inducing set, as a ``NystromGP`` of ``n x t`` data has them.

Example:
    >>> from ax.api.client import Client
    >>> client = Client()
    >>> client.configure_experiment(parameters=[...])
    >>> client.configure_optimization(objective="-loss")
    >>> client.set_generation_strategy(sketch_generation_strategy(num_initial=8))
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
from botorch import optim
from botorch.acquisition.acquisition import AcquisitionFunction
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.models.model import Model

try:
    from ax.adapter.registry import Generators
    from ax.generation_strategy.generation_node import GenerationStep
    from ax.generation_strategy.generation_strategy import GenerationStrategy
    from ax.generators.torch.botorch_modular.surrogate import SurrogateSpec
    from ax.generators.torch.botorch_modular.utils import ModelConfig
    from ax.storage.botorch_modular_registry import (
        register_acquisition_function,
        register_model,
    )
except ImportError as e:  # pragma: no cover - exercised in a subprocess
    raise ImportError(
        "botorch_sketch.integrations.ax needs Ax, the 'ax' extra: in a clone of "
        'this repository, pip install -e ".[ax]"'
    ) from e

from botorch_sketch.acquisition import (
    BKBUpperConfidenceBound,
    qBKBUpperConfidenceBound,
    qLogNEIMarginalBaseline,
)
from botorch_sketch.checks import checked_count
from botorch_sketch.models import GradientSubsetGP, NystromGP

__all__ = [
    "default_generation_strategy",
    "register_with_ax",
    "sketch_generation_strategy",
]


def register_with_ax(*classes: type[Model] | type[AcquisitionFunction]) -> None:
    r"""Register model and acquisition-function classes with Ax's JSON storage.

    Ax encodes the classes of a generation strategy by name, from a registry;
    classes missing from it cannot be saved. This package's own classes are
    registered when this module is imported.

    Args:
        classes: BoTorch ``Model`` or ``AcquisitionFunction`` subclasses.
    """
    for cls in classes:
        if isinstance(cls, type) and issubclass(cls, Model):
            register_model(cls)
        elif isinstance(cls, type) and issubclass(cls, AcquisitionFunction):
            register_acquisition_function(cls)
        else:
            raise UnsupportedError(
                "register_with_ax takes BoTorch Model or AcquisitionFunction "
                f"classes; got {cls!r}."
            )


register_with_ax(
    NystromGP,
    GradientSubsetGP,
    BKBUpperConfidenceBound,
    qBKBUpperConfidenceBound,
    qLogNEIMarginalBaseline,
)


#: The keyword arguments of the optimisers Ax hands ``optimizer_options`` to
#: (by search space: continuous, mixed, discrete).
_OPTIMIZE_ACQF_ARGUMENTS = frozenset(
    name
    for optimizer in (
        optim.optimize_acqf,
        optim.optimize_acqf_mixed,
        optim.optimize_acqf_discrete,
        optim.optimize_acqf_discrete_local_search,
        optim.optimize_acqf_mixed_alternating,
    )
    for name in inspect.signature(optimizer).parameters
) - {"acq_function"}


def _generation_strategy(
    name: str,
    num_initial: int,
    surrogate_spec: SurrogateSpec | None,
    botorch_acqf_class: type[AcquisitionFunction] | None,
    botorch_acqf_options: dict[str, Any] | None,
    optimizer_options: dict[str, Any] | None,
    torch_device: str | torch.device | None,
    seed: int | None,
    use_existing_trials: bool,
) -> GenerationStrategy:
    checked_count(num_initial, "num_initial")  # True counted as one trial
    if seed is not None:
        # A float or text seed failed at the first trial, in torch.
        checked_count(seed, "seed", minimum=0)
    unknown = sorted(set(optimizer_options or {}) - _OPTIMIZE_ACQF_ARGUMENTS)
    if unknown:
        # Ax hands them to optimize_acqf at the first model trial, after the
        # Sobol trials: a TypeError deep inside BoTorch there.
        raise InputDataError(
            f"optimizer_options {unknown} are not arguments of optimize_acqf or "
            "of BoTorch's other acquisition optimisers: "
            f"{sorted(_OPTIMIZE_ACQF_ARGUMENTS)}."
        )
    if botorch_acqf_class is not None:
        if not (
            isinstance(botorch_acqf_class, type)
            and issubclass(botorch_acqf_class, AcquisitionFunction)
        ):
            raise UnsupportedError(
                "botorch_acqf_class must be a BoTorch AcquisitionFunction class, got "
                f"{botorch_acqf_class!r}."
            )
        register_with_ax(botorch_acqf_class)
    elif botorch_acqf_options:
        raise InputDataError("botorch_acqf_options need a botorch_acqf_class.")
    generator_kwargs: dict[str, Any] = {}
    if surrogate_spec is not None:
        generator_kwargs["surrogate_spec"] = surrogate_spec
    if botorch_acqf_class is not None:
        generator_kwargs["botorch_acqf_class"] = botorch_acqf_class
        generator_kwargs["botorch_acqf_options"] = dict(botorch_acqf_options or {})
    if optimizer_options:
        # The adapter merges these into every ``gen`` call's options, which hand
        # ``optimizer_kwargs`` to ``optimize_acqf`` (num_restarts, raw_samples, ...).
        generator_kwargs["default_model_gen_options"] = {
            "optimizer_kwargs": dict(optimizer_options)
        }
    if torch_device is not None:
        generator_kwargs["torch_device"] = torch.device(torch_device)
    # As Ax's own dispatch: leave Sobol once ``num_initial`` trials are generated
    # (or attached, with ``use_existing_trials``) and at least half of them
    # observed; never propose an arm twice.
    return GenerationStrategy(
        name=name,
        nodes=[
            GenerationStep(
                generator=Generators.SOBOL,
                num_trials=num_initial,
                min_trials_observed=max(1, num_initial // 2),
                generator_kwargs={"seed": seed},
                should_deduplicate=True,
                use_all_trials_in_exp=use_existing_trials,
            ),
            GenerationStep(
                generator=Generators.BOTORCH_MODULAR,
                num_trials=-1,
                generator_kwargs=generator_kwargs,
                should_deduplicate=True,
            ),
        ],
    )


def sketch_generation_strategy(
    model_class: type[Model] = NystromGP,
    model_options: dict[str, Any] | None = None,
    num_initial: int = 5,
    botorch_acqf_class: type[AcquisitionFunction] | None = None,
    botorch_acqf_options: dict[str, Any] | None = None,
    optimizer_options: dict[str, Any] | None = None,
    torch_device: str | torch.device | None = None,
    seed: int | None = None,
    name: str | None = None,
    use_existing_trials: bool = False,
) -> GenerationStrategy:
    r"""Sobol trials, then Bayesian optimisation with one of this package's models.

    Args:
        model_class: The BoTorch model class (``NystromGP`` by default). It must
            accept Ax's constructor arguments (``train_X``, ``train_Y``,
            ``train_Yvar``, ``input_transform``, ``outcome_transform``) and
            ``construct_inputs(training_data, **model_options)``.
        model_options: Keyword arguments for ``model_class.construct_inputs``,
            e.g. ``{"inducing": GreedyVarianceSelector(64)}`` for ``NystromGP``. A
            client whose options are not JSON values cannot be saved.
        num_initial: The number of Sobol trials.
        botorch_acqf_class: A BoTorch acquisition function class, e.g.
            :class:`~botorch_sketch.acquisition.BKBUpperConfidenceBound`, or
            :class:`~botorch_sketch.acquisition.qLogNEIMarginalBaseline` (Ax's
            qLogNEI with a baseline chosen from the model's marginals, for one
            objective at large N); None for Ax's choice
            (``qLogNoisyExpectedImprovement`` for one objective).
        botorch_acqf_options: Keyword arguments for the acquisition function's
            input constructor (e.g. ``{"rkhs_norm": 2.0}``, or
            ``{"baseline_k": 2.0, "baseline_max_size": 64}``; Ax's
            ``botorch_acqf_options``).
        optimizer_options: Keyword arguments for ``optimize_acqf``, e.g.
            ``{"num_restarts": 4, "raw_samples": 128}``.
        torch_device: The device of the model, e.g. ``"cuda"``.
        seed: The seed of the Sobol sequence.
        name: The name of the strategy; defaults to ``"Sobol+<model class>"``.
        use_existing_trials: Count trials already on the experiment (e.g. from
            ``Client.attach_trial``) towards ``num_initial``.

    Returns:
        A ``GenerationStrategy`` for ``Client.set_generation_strategy``.
    """
    if not (isinstance(model_class, type) and issubclass(model_class, Model)):
        raise UnsupportedError(
            f"model_class must be a BoTorch Model class, got {model_class!r}."
        )
    register_with_ax(model_class)
    config = ModelConfig(
        botorch_model_class=model_class,
        model_options=dict(model_options or {}),
        name=model_class.__name__,
    )
    return _generation_strategy(
        name=name or f"Sobol+{model_class.__name__}",
        num_initial=num_initial,
        surrogate_spec=SurrogateSpec(model_configs=[config]),
        botorch_acqf_class=botorch_acqf_class,
        botorch_acqf_options=botorch_acqf_options,
        optimizer_options=optimizer_options,
        torch_device=torch_device,
        seed=seed,
        use_existing_trials=use_existing_trials,
    )


def default_generation_strategy(
    num_initial: int = 5,
    botorch_acqf_class: type[AcquisitionFunction] | None = None,
    botorch_acqf_options: dict[str, Any] | None = None,
    optimizer_options: dict[str, Any] | None = None,
    torch_device: str | torch.device | None = None,
    seed: int | None = None,
    name: str | None = None,
    use_existing_trials: bool = False,
) -> GenerationStrategy:
    r"""The same strategy as :func:`sketch_generation_strategy` with Ax's default model.

    Ax's modular BoTorch generator without a surrogate specification: an exact
    ``SingleTaskGP`` (``O(n^3)`` per fit), for comparisons.

    Args:
        num_initial: The number of Sobol trials.
        botorch_acqf_class: A BoTorch acquisition function class; None for Ax's
            choice.
        botorch_acqf_options: Keyword arguments for its input constructor.
        optimizer_options: Keyword arguments for ``optimize_acqf``.
        torch_device: The device of the model.
        seed: The seed of the Sobol sequence.
        name: The name of the strategy; defaults to ``"Sobol+AxDefault"``.
        use_existing_trials: Count trials already on the experiment towards
            ``num_initial``.

    Returns:
        A ``GenerationStrategy`` for ``Client.set_generation_strategy``.
    """
    return _generation_strategy(
        name=name or "Sobol+AxDefault",
        num_initial=num_initial,
        surrogate_spec=None,
        botorch_acqf_class=botorch_acqf_class,
        botorch_acqf_options=botorch_acqf_options,
        optimizer_options=optimizer_options,
        torch_device=torch_device,
        seed=seed,
        use_existing_trials=use_existing_trials,
    )
