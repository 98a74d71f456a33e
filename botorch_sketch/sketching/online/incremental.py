#!/usr/bin/env python3
r"""An online Nystrom/DTC regression model whose dictionary grows with the data.

:class:`IncrementalNystrom` is the model of EK-UCB [Zenati2022efficient]_ in this
package's coordinates. It keeps

- a :class:`~botorch_sketch.sketching.embedding.NystromEmbedding` of the
  dictionary (a subset of the observed inputs),
- a :class:`~botorch_sketch.sketching.posterior.WeightPosterior`
  ``N(w, C)`` (noise variance ``lambda``), and
- every observation: its input, embedding and residual prior variance
  (:class:`~botorch_sketch.sketching.posterior.EmbeddedPoints`, in buffers with
  spare rows and columns) and its reward.

One observation is absorbed by a rank-one Woodbury update in ``O(m^2)`` (the
paper's Sherman-Morrison step on ``Lambda``). A dictionary rule then decides
whether the observed input joins the dictionary: :class:`~botorch_sketch.
sketching.rules.KORS` (EK-UCB), ``"all"`` (every input: the exact kernel ridge /
GP posterior, i.e. KernelUCB) or ``"none"`` (a fixed dictionary, changed only
by :meth:`IncrementalNystrom.rebuild`, as CBKB and CBBKB do). On admission the
embedding is bordered (``NystromEmbedding.extended``), every stored
observation gets its new coordinate from its old one in ``O(t m)`` and the
posterior is bordered with the data along it (``WeightPosterior.extend``): the
paper's Schur updates of ``Lambda`` and ``K_ZZ^{-1}``, in ``O(t m + m^2)``.

In the paper's notation, ``mean(x) = K_Z(x)^T Lambda Gamma`` and
``var(x) = lambda sigma_tilde^2(x) = k(x, x) - Q(x, x) + lambda K_Z(x)^T Lambda
K_Z(x)``, the DTC mean and latent variance with noise ``lambda``; with every
observed input in the dictionary both are the exact GP posterior.

The statistics are sums over the data, so :meth:`IncrementalNystrom.refactorise`
(every ``refactorise_every`` observations) recomputes the posterior from them
and clears the drift of the recursive updates.

References:

.. [Zenati2022efficient]
    H. Zenati, A. Bietti, E. Diemert, J. Mairal, M. Martin, P. Gaillard.
    Efficient kernel UCB for contextual bandits. AISTATS 2022.
.. [Calandriello2017efficient]
    D. Calandriello, A. Lazaric, M. Valko. Efficient second-order online kernel
    learning with adaptive embedding. NeurIPS 2017.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import torch
from botorch.exceptions.errors import BotorchTensorDimensionError, InputDataError
from gpytorch.kernels import Kernel
from torch import Tensor

from botorch_sketch.checks import checked_count, checked_real
from botorch_sketch.sketching.embedding.kernels import kernel_matrix
from botorch_sketch.sketching.embedding.nystrom import NystromEmbedding
from botorch_sketch.sketching.posterior.embedded import EmbeddedPoints, grow_rows
from botorch_sketch.sketching.posterior.statistics import DTCStatistics
from botorch_sketch.sketching.posterior.weight_posterior import WeightPosterior
from botorch_sketch.sketching.rules.kors import KORS

DictionaryRule = KORS | Literal["all", "none"]


class Evaluation(NamedTuple):
    r"""The posterior at some inputs, with the pieces that observing one reuses.

    A policy scores its candidates, plays one and observes it: the played
    state's kernel row, prior variance and embedding are already in hand, and
    at bandit sizes each kernel call costs more than the arithmetic it does
    (:meth:`IncrementalNystrom.observe`).
    """

    mean: Tensor  #: ``n`` posterior means.
    variance: Tensor  #: ``n`` latent variances.
    kernel_rows: Tensor  #: ``n x m``, ``k(x, S)``.
    prior_variance: Tensor  #: ``n``, ``k(x, x)``.
    embedded: Tensor  #: ``n x m'``, ``z(x)``.
    version: int  #: The dictionary they were computed under.

    def row(self, index: Tensor | int) -> Evaluation:
        r"""The evaluation of one input, kept as a batch of one."""
        i = torch.as_tensor(index, device=self.mean.device).reshape(1)
        parts = (part.index_select(0, i) for part in self[:5])
        return Evaluation(*parts, self.version)


class IncrementalNystrom:
    r"""DTC regression with online updates and an online-grown dictionary."""

    def __init__(
        self,
        kernel: Kernel,
        noise_var: float,
        dim: int,
        rule: DictionaryRule = "all",
        refactorise_every: int = 1000,
        dtype: torch.dtype = torch.double,
        device: torch.device | None = None,
    ) -> None:
        r"""An empty model (the prior; empty dictionary).

        Args:
            kernel: A gpytorch kernel on ``d``-dimensional inputs (no batch shape).
            noise_var: ``lambda``, the regulariser (GP noise variance).
            dim: The input dimension ``d``.
            rule: The dictionary rule: a :class:`KORS`, ``"all"`` or ``"none"``.
            refactorise_every: Observations between refactorisations.
            dtype: The floating point type.
            device: The device.
        """
        # NaN passed ``< 1`` checks (``refactorise_every``), True was a noise
        # variance of 1 and 2.5 a dimension that failed inside torch.
        noise_var = checked_real(noise_var, "noise_var", positive=True)
        dim = checked_count(dim, "dim")
        if not (isinstance(rule, KORS) or rule in ("all", "none")):
            raise InputDataError(f"rule must be a KORS, 'all' or 'none'; got {rule!r}.")
        refactorise_every = checked_count(refactorise_every, "refactorise_every")
        self.kernel = kernel
        self.noise_var = noise_var
        self.rule = rule
        self.refactorise_every = refactorise_every
        like = torch.empty(0, dtype=dtype, device=device)
        self.embedding = NystromEmbedding(kernel, like.new_empty(0, dim))
        self.posterior = WeightPosterior.prior(0, like=like)
        self.dictionary = torch.zeros(0, dtype=torch.long, device=like.device)
        self.points = EmbeddedPoints.empty(self.embedding, like.new_empty(0, dim))
        # With spare room, doubled when full, as the points' buffers.
        self._y = like.new_empty(16)
        self.num_observations = 0
        self._since_refactor = 0
        # Counts dictionary changes: an :class:`Evaluation` made before one is
        # not reused after it.
        self.version = 0

    # ------------------------------------------------------------------ state
    @property
    def dictionary_size(self) -> int:
        r"""The number ``m`` of dictionary points."""
        return int(self.dictionary.numel())

    @property
    def input_dim(self) -> int:
        r"""The input dimension ``d``."""
        return self.points.X.shape[-1]

    @property
    def X(self) -> Tensor:
        r"""The ``t x d`` observed inputs."""
        return self.points.X

    @property
    def y(self) -> Tensor:
        r"""The ``t`` observed rewards."""
        return self._y[: self.num_observations]

    @property
    def Z(self) -> Tensor:
        r"""The ``t x m'`` embedding of the observed inputs."""
        return self.points.Z

    # ------------------------------------------------------------ prediction
    def embed(self, X: Tensor) -> tuple[Tensor, Tensor]:
        r"""Embedding and residual prior variance of inputs.

        Args:
            X: A ``n x d`` tensor.

        Returns:
            The ``n x m'`` embedding and the ``n`` variances ``k(x, x) - ||z||^2``.
        """
        Z = self.embedding(X)
        return Z, self.embedding.residual_variance(X, Z)

    def mean_and_variance(self, X: Tensor) -> tuple[Tensor, Tensor]:
        r"""Posterior mean and latent variance (``O(n m^2)``).

        Args:
            X: A ``n x d`` tensor of inputs.

        Returns:
            The ``n`` means ``z^T w`` and ``n`` variances ``k - ||z||^2 + z^T C z``.
        """
        evaluation = self.evaluate(X)
        return evaluation.mean, evaluation.variance

    def evaluate(self, X: Tensor) -> Evaluation:
        r"""Posterior mean and variance, with the pieces ``observe`` can reuse.

        Args:
            X: A ``n x d`` tensor of inputs.

        Returns:
            The :class:`Evaluation` of ``X`` under the current dictionary.
        """
        self._check_inputs(X)
        emb = self.embedding
        rows, prior = emb.kernel_rows_and_prior(X)
        Z = rows @ emb.root
        residual = emb.residual_variance(X, Z, prior_variance=prior)
        return Evaluation(
            mean=self.posterior.mean(Z),
            variance=self.posterior.variance(Z, residual),
            kernel_rows=rows,
            prior_variance=prior,
            embedded=Z,
            version=self.version,
        )

    def mean_and_covariance(self, X: Tensor) -> tuple[Tensor, Tensor]:
        r"""Joint posterior of batches of points (``O(q m^2 + q^2 m)`` per batch).

        Args:
            X: A ``batch_shape x q x d`` tensor of inputs.

        Returns:
            The ``batch_shape x q`` means and ``batch_shape x q x q`` covariances
            ``K(X, X) - Z Z^T + Z C Z^T`` (the DTC process, exact prior term).
        """
        if X.ndim < 2 or X.shape[-1] != self.input_dim:
            raise BotorchTensorDimensionError(
                f"Inputs must be batch_shape x q x {self.input_dim}, got shape "
                f"{tuple(X.shape)}."
            )
        Z = self.embedding(X)
        K = kernel_matrix(self.kernel, X)
        return self.posterior.mean(Z), self.posterior.covariance(Z, K)

    def observed_variance(self) -> Tensor:
        r"""Posterior variances of the observed inputs (``O(t m^2)``)."""
        return self.points.posterior_variance(self.posterior)

    # --------------------------------------------------------------- updates
    def observe(
        self, x: Tensor, y: Tensor, evaluation: Evaluation | None = None
    ) -> bool:
        r"""Absorb one observation and apply the dictionary rule.

        ``O(m^2)`` if the dictionary does not grow, ``O(t m + m^2)`` if it does.

        Args:
            x: A ``d`` (or ``1 x d``) input.
            y: Its reward (0-dim or ``1``).
            evaluation: ``x``'s :class:`Evaluation` (``Evaluation.row``), if
                the caller holds it: its kernel row, prior variance and
                embedding are reused if it was made under the current
                dictionary, and computed again otherwise.

        Returns:
            Whether ``x`` joined the dictionary.
        """
        if torch.is_grad_enabled():
            # The state never carries a graph: a kernel whose hyperparameters
            # require grad (a gpytorch kernel as made) failed in an ``out=``
            # product deep inside the update.
            with torch.no_grad():
                return self.observe(x, y, evaluation)
        x = x.reshape(1, -1)
        self._check_inputs(x)
        y = torch.as_tensor(y, dtype=x.dtype, device=x.device).reshape(1)
        if not bool(torch.isfinite(y).all()):
            raise InputDataError("The reward is NaN or infinite.")
        if evaluation is not None and evaluation.version == self.version:
            k_xS, kdiag = evaluation.kernel_rows, evaluation.prior_variance
            z = evaluation.embedded
        else:
            k_xS, kdiag = self.embedding.kernel_rows_and_prior(x)  # 1 x m, 1
            z = k_xS @ self.embedding.root
        t = self.points.append(x, z, kdiag)
        if t == self._y.shape[0]:
            self._y = grow_rows(self._y)
        self._y[t] = y.squeeze(0)
        self.num_observations = t + 1
        # Sherman-Morrison on the current dictionary, in place: the general
        # rank-q route allocates several m x m matrices per round.
        self.posterior.update_one_(
            z[0], float(self.points.residual[t]), float(y), self.noise_var
        )
        inserted = False
        if self.rule == "all":
            inserted = self._insert(t, z, kdiag)
        elif isinstance(self.rule, KORS):
            if self.rule.size == 0:
                # The first state always joins (Z_1 = {s_1} in Alg. 2 of
                # [Zenati2022efficient]_): before it, the model is the prior.
                admit, p = True, torch.ones_like(kdiag[0])
            else:
                coin, prob = self.rule.consider(self.rule.leverage(k_xS, kdiag))
                admit, p = bool(coin[0]), prob[0]
            if admit and self._insert(t, z, kdiag):
                self.rule.admit(k_xS, kdiag, p)
                inserted = True
        self._since_refactor += 1
        if self._since_refactor >= self.refactorise_every:
            self.refactorise()
        return inserted

    def _insert(self, index: int, z: Tensor, prior_variance: Tensor) -> bool:
        r"""Add observation ``index``'s input to the dictionary (``O(t m)``).

        Args:
            index: The observation.
            z: Its ``1 x m'`` embedding.
            prior_variance: Its prior variance (one element).

        Returns:
            False if it lies in the numerical span of the dictionary already.
        """
        grown = self.embedding.extended(self.points.X[index], z, prior_variance)
        if grown is None:
            return False
        m = self.embedding.dim
        # New coordinate of every observation, from its old coordinates.
        c = self.points.add_coordinate(grown)
        t = self.num_observations
        self.posterior.extend_with_data(
            self.points.Z[:, :m], c, self._y[:t], torch.full_like(c, self.noise_var)
        )
        self.embedding = grown
        self.dictionary = torch.cat(
            [self.dictionary, self.dictionary.new_tensor([index])]
        )
        self.version += 1
        return True

    @torch.no_grad()
    def refactorise(self) -> None:
        r"""Recompute the posterior (and the KORS inverse) from sums (``O(t m^2)``).

        The statistics are recomputed from the stored embeddings too, so that
        the drift of the running sums is cleared along with that of ``C``.
        """
        t = self.num_observations
        points = self.points
        noise = torch.full_like(self._y[:t], self.noise_var)
        if t:
            stats = DTCStatistics.from_embedded(
                points.Z, points.residual, self._y[:t], noise
            )
        else:
            stats = DTCStatistics.empty(points.dim, like=self._y)
        self.posterior = WeightPosterior(stats)
        if isinstance(self.rule, KORS) and self.rule.size:
            S = self.embedding.inducing_points
            self.rule.refactorise(kernel_matrix(self.kernel, S))
        self._since_refactor = 0

    @torch.no_grad()
    def rebuild(self, dictionary: Tensor) -> None:
        r"""Replace the dictionary by observed inputs and refit (``O(t m^2 + m^3)``).

        Args:
            dictionary: A ``m`` tensor of indices into the observations.
        """
        dictionary = torch.as_tensor(dictionary, device=self._y.device).long()
        dictionary = dictionary.reshape(-1)
        t = self.num_observations
        if dictionary.numel() and (
            int(dictionary.min()) < 0 or int(dictionary.max()) >= t
        ):
            raise InputDataError(
                f"Dictionary indices must lie in [0, {t}), got "
                f"[{int(dictionary.min())}, {int(dictionary.max())}]."
            )
        S = self.points.X[dictionary]
        K_XS = kernel_matrix(self.kernel, self.points.X, S)
        self.embedding = NystromEmbedding(self.kernel, S, gram=K_XS[dictionary])
        self.points.reembed(self.embedding, K_XS @ self.embedding.root)
        self.dictionary = dictionary
        self.version += 1
        self.refactorise()

    def _check_inputs(self, X: Tensor) -> None:
        d = self.input_dim
        if X.ndim != 2 or X.shape[-1] != d:
            raise BotorchTensorDimensionError(
                f"Inputs must be n x {d}, got shape {tuple(X.shape)}."
            )
        if not bool(torch.isfinite(X).all()):
            raise InputDataError("Inputs contain NaN or infinite values.")
