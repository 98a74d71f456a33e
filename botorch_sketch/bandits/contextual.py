#!/usr/bin/env python3
r"""Contextual kernel UCB policies on an online Nystrom/DTC model.

All four policies score the round's ``C`` candidates (context joined with each
action, ``C x d``) by ``mu(s) + beta sigma_tilde(s)`` with
``sigma_tilde^2 = var(s) / lambda``, the convention of [Zenati2022efficient]_
and its code (``var`` the DTC/GP latent variance with noise variance
``lambda``), and play the argmax (ties to the lowest index). ``beta`` is a
constant, 0.1 by default as in the authors' code for every method (the
theoretical radius of their Lemma 4.1 is too pessimistic in practice). The first
round, with no data, plays a uniformly drawn candidate.

They differ only in how the dictionary of
:class:`~botorch_sketch.sketching.online.IncrementalNystrom` evolves:

- :class:`KernelUCB`: every played state joins it, so the model is the exact
  kernel ridge / GP posterior (K-UCB, Alg. 3 of [Zenati2022efficient]_), grown
  by Schur bordering in ``O(t^2)`` per round.
- :class:`EKUCB`: states join by KORS (Eq. (41)); ``O(C m^2)`` per round, plus
  ``O(t m)`` on the at most ``m`` rounds that grow the dictionary.
- :class:`CBKB`: the dictionary is redrawn every round from all past states
  with probabilities ``min(1, qbar sigma_tilde^2)`` under the current model
  [Calandriello2019bkb]_, and the model refitted, ``O(t m^2)`` per round.
- :class:`CBBKB`: the dictionary is frozen while the variance accumulated since
  the last redraw, ``1 + sum sigma_tilde^2(s_t)``, stays below a threshold
  [Calandriello2020near]_; in between, rank-one updates as EK-UCB's.

References:

.. [Zenati2022efficient]
    H. Zenati, A. Bietti, E. Diemert, J. Mairal, M. Martin, P. Gaillard.
    Efficient kernel UCB for contextual bandits. AISTATS 2022.
.. [Calandriello2019bkb]
    D. Calandriello, L. Carratino, A. Lazaric, M. Valko, L. Rosasco. Gaussian
    process optimization with adaptive sketching: scalable and no regret. COLT
    2019.
.. [Calandriello2020near]
    D. Calandriello, L. Carratino, A. Lazaric, M. Valko, L. Rosasco. Near-linear
    time Gaussian process optimization with adaptive batching and resparsification.
    ICML 2020.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from botorch.exceptions.errors import BotorchTensorDimensionError, InputDataError
from gpytorch.kernels import Kernel
from torch import Tensor

from botorch_sketch.bandits.policy import ContextualPolicy, argmax_first
from botorch_sketch.sketching.online import (
    DictionaryRule,
    Evaluation,
    IncrementalNystrom,
)
from botorch_sketch.sketching.rules import KORS, Candidates, RidgeLeverageSampler

#: The UCB width of the authors' code, for every method.
DEFAULT_BETA = 0.1


class OnlineKernelUCB(ContextualPolicy):
    r"""UCB on an :class:`IncrementalNystrom` model; subclasses set the rule."""

    name = "online-kernel-ucb"

    def __init__(
        self,
        kernel: Kernel,
        noise_var: float,
        dim: int,
        beta: float = DEFAULT_BETA,
        rule: DictionaryRule = "all",
        refactorise_every: int = 1000,
        dtype: torch.dtype = torch.double,
        device: torch.device | None = None,
        generator: torch.Generator | None = None,
    ) -> None:
        r"""Configure the policy.

        Args:
            kernel: A gpytorch kernel on the joint ``d``-dimensional state
                (context and action concatenated; use ``active_dims`` and a
                ``ProductKernel`` for a context kernel times an action kernel).
            noise_var: ``lambda``, the ridge regulariser (GP noise variance).
            dim: The state dimension ``d``.
            beta: The UCB width on the ``sigma_tilde = sqrt(var / lambda)`` scale.
            rule: The model's dictionary rule.
            refactorise_every: Rounds between refactorisations of the model.
            dtype: The floating point type.
            device: The device.
            generator: The random generator.
        """
        super().__init__(generator=generator)
        if not (math.isfinite(beta) and beta >= 0):
            raise InputDataError(f"beta must be finite and non-negative, got {beta}.")
        self.beta = float(beta)
        self.noise_var = float(noise_var)
        self.model = IncrementalNystrom(
            kernel,
            noise_var,
            dim,
            rule=rule,
            refactorise_every=refactorise_every,
            dtype=dtype,
            device=device,
        )
        # The played state and its evaluation from ``select``, which
        # ``update`` reuses when it observes that very state.
        self._played: tuple[Tensor, Evaluation] | None = None

    @property
    def dictionary_size(self) -> int:
        r"""The model's dictionary size ``m``."""
        return self.model.dictionary_size

    def scores(self, candidates: Tensor) -> Tensor:
        r"""UCB scores ``mu + beta sqrt(var / lambda)`` of ``C x d`` candidates."""
        return self._scores(self.model.evaluate(candidates))

    def _scores(self, evaluation: Evaluation) -> Tensor:
        return (
            evaluation.mean + self.beta * (evaluation.variance / self.noise_var).sqrt()
        )

    @torch.no_grad()
    def select(self, candidates: Tensor) -> Tensor:
        r"""The index of the candidate with the largest score (``C x d`` input)."""
        self._check(candidates)
        self._played = None
        if self.model.num_observations == 0:
            # No model to evaluate them yet, which would have checked them.
            if not bool(torch.isfinite(candidates).all()):
                raise InputDataError("Candidates contain NaN or infinite values.")
            u = self._uniform(1, candidates)
            return (
                (u * candidates.shape[0]).long().clamp(max=candidates.shape[0] - 1)[0]
            )
        evaluation = self.model.evaluate(candidates)
        index = argmax_first(self._scores(evaluation))
        self._played = (candidates[index], evaluation.row(index))
        return index

    @torch.no_grad()
    def update(self, features: Tensor, rewards: Tensor) -> None:
        r"""Absorb ``q`` observed states (``q x d``) and rewards (``q``)."""
        features = features.reshape(-1, features.shape[-1])
        self._check(features)
        rewards = torch.as_tensor(
            rewards, dtype=features.dtype, device=features.device
        ).reshape(-1)
        if rewards.shape[0] != features.shape[0]:
            raise InputDataError(
                f"Got {features.shape[0]} states but {rewards.shape[0]} rewards."
            )
        played, self._played = self._played, None
        for x, r in zip(features, rewards, strict=True):
            known = None
            if played is not None and torch.equal(x, played[0]):
                known, played = played[1], None
            self._observe(x, r, known)

    def _observe(self, x: Tensor, r: Tensor, known: Evaluation | None) -> None:
        # ``known``: x's evaluation from ``select``, if x is the state it chose.
        self.model.observe(x, r, known)

    def _check(self, X: Tensor) -> None:
        d = self.model.input_dim
        if X.ndim != 2 or X.shape[-1] != d or X.shape[0] == 0:
            raise BotorchTensorDimensionError(
                f"Expected a non-empty C x {d} tensor of states, got shape "
                f"{tuple(X.shape)}."
            )
        if not X.is_floating_point():
            raise InputDataError(f"States must be floating point, got {X.dtype}.")


class KernelUCB(OnlineKernelUCB):
    r"""Exact kernel UCB (K-UCB): every played state is in the dictionary."""

    name = "kernel-ucb"

    def __init__(self, kernel: Kernel, noise_var: float, dim: int, **kwargs) -> None:
        r"""See :class:`OnlineKernelUCB` (the rule is ``"all"``)."""
        super().__init__(kernel, noise_var, dim, rule="all", **kwargs)


class EKUCB(OnlineKernelUCB):
    r"""Efficient kernel UCB: an incremental Nystrom model grown by KORS."""

    name = "ek-ucb"

    def __init__(
        self,
        kernel: Kernel,
        noise_var: float,
        dim: int,
        gamma: float = 1.0,
        mu: float | None = None,
        epsilon: float = 0.5,
        generator: torch.Generator | None = None,
        **kwargs: Any,
    ) -> None:
        r"""Configure the policy.

        Args:
            kernel: The joint kernel.
            noise_var: ``lambda``.
            dim: The state dimension.
            gamma: KORS oversampling; admission probability ``min(1, gamma tau)``.
            mu: KORS ridge; by default ``lambda`` (the paper's choice).
            epsilon: KORS accuracy (1/2 in the paper).
            generator: The random generator (first round and KORS coins).
            **kwargs: Passed to :class:`OnlineKernelUCB`.
        """
        rule = KORS(
            mu=noise_var if mu is None else mu,
            epsilon=epsilon,
            gamma=gamma,
            generator=generator,
        )
        super().__init__(
            kernel, noise_var, dim, rule=rule, generator=generator, **kwargs
        )


class CBKB(OnlineKernelUCB):
    r"""Contextual BKB: the dictionary is redrawn from all past states every round."""

    name = "cbkb"

    def __init__(
        self,
        kernel: Kernel,
        noise_var: float,
        dim: int,
        qbar: float = 10.0,
        max_size: int | None = None,
        generator: torch.Generator | None = None,
        **kwargs: Any,
    ) -> None:
        r"""Configure the policy.

        Args:
            kernel: The joint kernel.
            noise_var: ``lambda``.
            dim: The state dimension.
            qbar: The oversampling of the redraw, ``p_i = min(1, qbar
                sigma_tilde^2_i)`` (10 in the authors' code).
            max_size: Cap on the expected dictionary size (None: no cap).
            generator: The random generator.
            **kwargs: Passed to :class:`OnlineKernelUCB`.
        """
        super().__init__(
            kernel, noise_var, dim, rule="none", generator=generator, **kwargs
        )
        self.sampler = RidgeLeverageSampler(
            qbar=qbar, max_size=max_size, generator=generator
        )

    def _observe(self, x: Tensor, r: Tensor, known: Evaluation | None) -> None:
        self.model.observe(x, r, known)
        self._resample()

    def _resample(self) -> None:
        # Variances of every past state under the current dictionary, O(t m^2).
        scores = self.model.observed_variance() / self.noise_var
        self.model.rebuild(self.sampler.select(Candidates(scores=scores)))


class CBBKB(CBKB):
    r"""Contextual BBKB: redraw only when the accumulated variance is large."""

    name = "cbbkb"

    def __init__(
        self,
        kernel: Kernel,
        noise_var: float,
        dim: int,
        threshold: float = 3.0,
        **kwargs: Any,
    ) -> None:
        r"""Configure the policy.

        Args:
            kernel: The joint kernel.
            noise_var: ``lambda``.
            dim: The state dimension.
            threshold: Redraw once ``1 + sum sigma_tilde^2`` of the states played
                since the last redraw exceeds it (the ``C`` of
                [Calandriello2020near]_; the authors ran 3, 10 and 30).
            **kwargs: Passed to :class:`CBKB`.
        """
        super().__init__(kernel, noise_var, dim, **kwargs)
        if not (1 <= threshold < math.inf):
            raise InputDataError(f"threshold must be at least 1, got {threshold}.")
        self.threshold = float(threshold)
        self._accumulated = 1.0
        self.num_redraws = 0

    def _observe(self, x: Tensor, r: Tensor, known: Evaluation | None) -> None:
        if known is None or known.version != self.model.version:
            known = self.model.evaluate(x.reshape(1, -1))
        self._accumulated += float(known.variance) / self.noise_var
        self.model.observe(x, r, known)
        if self.model.dictionary_size == 0 or self._accumulated > self.threshold:
            self._resample()
            self._accumulated = 1.0
            self.num_redraws += 1
