#!/usr/bin/env python3
r"""What ``SketchSampler`` carries from one trial of a study to the next."""

from __future__ import annotations

import threading
import warnings
import weakref
from typing import Any

import numpy as np
import torch
from botorch.exceptions.errors import InputDataError
from botorch.fit import fit_gpytorch_mll
from botorch.models.model import Model
from gpytorch.mlls import ExactMarginalLogLikelihood
from optuna.distributions import BaseDistribution
from optuna.study import Study
from optuna.trial import FrozenTrial
from torch import Tensor

from botorch_sketch.bo import IncrementalGP
from botorch_sketch.integrations.optuna.encoding import _TKWARGS, _Encoding
from botorch_sketch.integrations.optuna.options import _REFIT_GROWTH, _SamplerOptions
from botorch_sketch.integrations.optuna.warping import _HalfRankWarp, _warped
from botorch_sketch.models.nystrom_gp import ExactRegimeWarning


class _CarriedModels:
    r"""Models, hyperparameters, warpings and encodings of one study's trials.

    Fitted hyperparameters (or carried ``NystromGP``\ s, or the objective's
    warping) by output name are valid for one search space only, and the
    encoded parameters of completed trials (by trial number) for one search
    space of one study: :meth:`use` drops what does not describe the study
    and search space of the next suggestion. The lock keeps ``n_jobs`` threads
    from updating one output's state at once; it is re-entrant, as a
    suggestion holds it and fits models, which take it too.
    """

    def __init__(self, options: _SamplerOptions) -> None:
        r"""Carry nothing yet, for a sampler with these options."""
        self.options = options
        self.warm_space: dict[str, BaseDistribution] | None = None
        self.warm_states: dict[str, dict[str, Tensor]] = {}
        self.incremental: dict[str, IncrementalGP] = {}
        # The objective's warping by output name, re-estimated only when its
        # model is refitted anyway (see ``warp``).
        self.warps: dict[str, _HalfRankWarp] = {}
        # A completed trial's parameters never change, and encoding every
        # trial anew each time costs more than the model at n = 1000.
        self.encoded: dict[int, np.ndarray] = {}
        # The study all of the above describe, as (storage, study id): a
        # weak reference, so that the sampler neither keeps a finished
        # study's storage alive nor mistakes a new storage that reuses a
        # freed one's address for it.
        self.study_key: tuple[weakref.ref, int] | None = None
        self.lock = threading.RLock()

    def __getstate__(self) -> dict[str, Any]:
        r"""Pickle without the lock and the study (a weak reference)."""
        state = self.__dict__.copy()
        del state["lock"]
        # The restored sampler encodes its next study's trials afresh but
        # keeps the fitted hyperparameters (see ``use``).
        state["study_key"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        r"""Restore a pickled state with a new lock."""
        self.__dict__.update(state)
        self.lock = threading.RLock()

    def use(self, study: Study, search_space: dict[str, BaseDistribution]) -> None:
        r"""Drop what does not describe ``study`` and ``search_space``.

        The study is told by its storage and study id, which Optuna does not
        make public: a study's name can be reused once it is deleted, and
        ``load_study`` makes a new ``Study`` object for the same study. Every
        study numbers its trials from 0, so the cached encodings go with
        another study. Models and hyperparameters fitted to another study's
        objective go too, but not those of a sampler just unpickled (no study
        yet), most likely to resume the same study.
        """
        key = self.study_key
        storage, study_id = study._storage, study._study_id
        if key is None or key[0]() is not storage or key[1] != study_id:
            if key is not None:
                self.warm_space = None
            self.study_key = (weakref.ref(storage), study_id)
            self.encoded = {}
        if self.warm_space != search_space:
            self.warm_space = dict(search_space)
            self.warm_states = {}
            self.incremental = {}
            self.warps = {}
            self.encoded = {}

    def encode_completed(
        self, encoding: _Encoding, completed: list[FrozenTrial]
    ) -> Tensor:
        r"""The ``n x D`` encoded parameters of completed trials (cached)."""
        rows = []
        for t in completed:
            row = self.encoded.get(t.number)
            if row is None:
                row = self.encoded[t.number] = encoding.encode(t.params)
            rows.append(row)
        return torch.as_tensor(np.stack(rows), **_TKWARGS)

    def warp(self, train_Y: Tensor, name: str) -> Tensor:
        r"""The objective's values as modelled (see ``_HalfRankWarp``).

        A carried ``NystromGP`` absorbs new trials by a Woodbury step only
        while the earlier rows are unchanged: its warping is re-estimated when
        the model is refitted on schedule anyway and kept in between (new
        values go through the kept map). Other models are fitted anew each
        trial, and so is their warping.
        """
        with self.lock:
            carried = self.options.carries_nystrom
            surrogate = self.incremental.get(name) if carried else None
            return _warped(self.warps, name, train_Y, surrogate)

    def fit(self, train_X: Tensor, train_Y: Tensor, name: str) -> Model:
        r"""Build and fit one output's model, warm-started when possible."""
        options = self.options
        if not isinstance(options.model, type):
            model = options.model(train_X, train_Y)
            if not isinstance(model, Model):
                # Else an AttributeError deep in the acquisition, about
                # ``posterior``, names neither the factory nor what it returned.
                factory = getattr(options.model, "__qualname__", repr(options.model))
                raise InputDataError(
                    f"The model factory {factory} must return a fitted BoTorch "
                    f"Model; it returned a {type(model).__name__}."
                )
            return model
        with self.lock, warnings.catch_warnings():
            # Being exact below a few hundred trials is intended, not news.
            warnings.simplefilter("ignore", ExactRegimeWarning)
            if options.carries_nystrom:
                surrogate = self.incremental.get(name)
                if surrogate is None:
                    surrogate = self.incremental[name] = IncrementalGP(
                        refit_every=options.refit_every,
                        refit_growth=_REFIT_GROWTH,
                        model_kwargs=options.model_options,
                    )
                return surrogate(train_X, train_Y)
            model = options.model(train_X, train_Y, **options.model_options)
            state = self.warm_states.get(name) if options.warm_start else None
            if state is not None:
                model.load_state_dict(state, strict=False)
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
            # Only the hyperparameters: the outcome transform's statistics
            # belong to the data they were computed on.
            self.warm_states[name] = {
                key: value.detach().clone() for key, value in model.named_parameters()
            }
        return model
