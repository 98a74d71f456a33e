#!/usr/bin/env python3
r"""UCB on a finite arm set with a DTC/Nystrom posterior: the shared machinery.

:class:`DTCUCB` keeps, for all ``A`` arms, the DTC posterior mean and variance
under an inducing set (the *dictionary*, a subset of the arms), updated by
rank-one steps in ``O(A m)`` per pull (:mod:`botorch_sketch.sketching.online.tracked`).
Used directly with a fixed or uniformly drawn dictionary it is the "DTC with
fixed inducing points" baseline of [Calandriello2019bkb]_ (no guarantee: its
variance can starve); :class:`~botorch_sketch.bandits.bkb.BKB` resamples the
dictionary by posterior variance and
:class:`~botorch_sketch.bandits.gp_ucb.GPUCB` puts every pulled arm in it (exact).

Scores are ``mu(x) + beta_t sigma_tilde(x)`` with ``sigma_tilde^2 = var /
lambda`` and ``beta_t`` from :func:`~botorch_sketch.sketching.posterior.bkb_width`
or fixed. Batches (``q > 1``) are chosen greedily, each chosen arm shrinking the
variances as if observed with its value not yet known, as in GP-BUCB
[Desautels2014parallelizing]_, by conditioning the posterior process (the joint
posterior covariance a BoTorch ``posterior`` returns, with its exact prior
term) rather than the Nystrom weights, which would leave arms outside the
dictionary's span unchanged; the width is not inflated. With no observation
yet, the first arm is drawn uniformly (every arm has the same prior score under
a stationary kernel).

References:

.. [Calandriello2019bkb]
    D. Calandriello, L. Carratino, A. Lazaric, M. Valko, L. Rosasco. Gaussian
    process optimization with adaptive sketching: scalable and no regret. COLT
    2019.
.. [Desautels2014parallelizing]
    T. Desautels, A. Krause, J. Burdick. Parallelizing exploration-exploitation
    tradeoffs in Gaussian process bandit optimization. JMLR 2014.
"""

from __future__ import annotations

import math

import torch
from botorch.exceptions.errors import InputDataError
from gpytorch.kernels import Kernel
from torch import Tensor

from botorch_sketch.bandits.policy import (
    FiniteArmPolicy,
    argmax_first,
)
from botorch_sketch.checks import checked_count
from botorch_sketch.sketching.embedding import (
    chunk_size_for,
    kernel_diagonal,
    row_chunks,
)
from botorch_sketch.sketching.online import TrackedCandidates
from botorch_sketch.sketching.posterior import (
    DTCStatistics,
    WeightPosterior,
    WidthForm,
    bkb_width,
)


def _check_dictionary_size(size: int) -> None:
    # A negative count sliced off the last arms of the permutation.
    if isinstance(size, bool) or size < 0:
        raise InputDataError(
            f"dictionary, as a number of arms, must be a non-negative int; got "
            f"{size!r}."
        )


def _check_dictionary(dictionary: Tensor | list[int], num_arms: int) -> Tensor:
    # Arm indices: an index past the arms was an IndexError deep in the rebuild.
    index = torch.as_tensor(dictionary)
    if index.numel() == 0:
        return index.reshape(0).long()
    if index.dtype == torch.bool or index.is_floating_point() or index.dim() != 1:
        raise InputDataError(
            "dictionary must be a 1-d integer tensor of arm indices, got dtype "
            f"{index.dtype} and shape {tuple(index.shape)}."
        )
    bad = index[(index < 0) | (index >= num_arms)]
    if bad.numel():
        raise InputDataError(
            f"dictionary indices must lie in [0, {num_arms}) for {num_arms} arms, "
            f"got {bad.tolist()}."
        )
    if index.unique().numel() != index.numel():
        raise InputDataError("dictionary indices must be distinct.")
    return index.long()


def _check_kernel_like_arms(kernel: Kernel, arms: Tensor) -> None:
    # float32 arms under a float64 kernel mixed dtypes in the arms' tracked
    # means and variances, and failed later inside ``addmv``. (A float32
    # kernel on float64 arms computes in float64, as torch promotes.)
    bits = torch.finfo(arms.dtype).bits
    for name, value in kernel.named_parameters():
        wider = value.is_floating_point() and torch.finfo(value.dtype).bits > bits
        if wider or value.device != arms.device:
            raise InputDataError(
                f"The arms are {arms.dtype} on {arms.device} but the kernel's "
                f"{name} is {value.dtype} on {value.device}: move one to the "
                f"other (``arms.to(...)`` or ``kernel.to(...)``)."
            )


class DTCUCB(FiniteArmPolicy):
    r"""UCB with a DTC posterior on a fixed dictionary of arms."""

    name = "dtc-ucb"
    #: The dictionary's accuracy ``eps`` in the width (unknown for a fixed set).
    default_epsilon = 0.5
    #: From this many arms on, the arms' means and variances follow the pulls
    #: :attr:`lazy_pulls` at a time (:class:`~botorch_sketch.sketching.online.tracked.
    #: TrackedCandidates`), and each step's arm is found from bounds on the
    #: scores with exact scores for the few arms that could win: the same arm,
    #: without a pass over the ``A x m`` embedding per step (1.4-1.8x less time
    #: at 10^5 arms). Below it, the bookkeeping costs more than the pass it
    #: saves (break-even near 2 x 10^4 arms). "The same" is up to rounding: the
    #: arms' embedding is then stored by point, its products round otherwise,
    #: and the numerical-span test of an insertion can go the other way on a
    #: borderline arm, after which the runs differ as runs on two CPUs do.
    #: On a GPU the pass is cheap and the bookkeeping's small kernels are not
    #: (at 10^5 arms on an H100, 0.61 against 1.04 ms a step late for BKB and
    #: 0.34 against 1.00 for GP-UCB): pulls are held by default on the CPU only.
    lazy_min_arms: int = 50_000
    #: The pulls held before one matrix product applies them to every arm.
    lazy_pulls: int = 8

    def __init__(
        self,
        arms: Tensor,
        kernel: Kernel,
        noise_var: float,
        dictionary: Tensor | int | None = None,
        beta: float | WidthForm = "theory",
        noise_std: float | None = None,
        rkhs_norm: float = 1.0,
        delta: float = 0.5,
        epsilon: float | None = None,
        refactorise_every: int = 1000,
        chunk_size: int | None = None,
        generator: torch.Generator | None = None,
        lazy_updates: bool | None = None,
    ) -> None:
        r"""Configure the policy.

        Args:
            arms: A ``A x d`` tensor of arms.
            kernel: A gpytorch kernel (its hyperparameters are used as they are).
            noise_var: ``lambda``, the regulariser (the GP noise variance).
            dictionary: Arm indices of the inducing set, or a number ``m`` of arms
                drawn uniformly, or None for the empty set (the prior).
            beta: A fixed width, or the form of BKB's width, ``"theory"`` or
                ``"authors"`` (:func:`~botorch_sketch.sketching.posterior.bkb_width`).
            noise_std: The sub-Gaussian constant ``xi`` of the width; by default
                ``sqrt(noise_var)``.
            rkhs_norm: ``F``, the assumed RKHS norm of the reward function.
            delta: The failure probability of the width.
            epsilon: The dictionary accuracy in the width; by default the class's.
            refactorise_every: Pulls between refactorisations of the posterior, which
                clear the rounding drift of the rank-one updates.
            chunk_size: Arms per chunk in ``O(A m)`` work; by default about 8 MB.
            generator: The random generator.
            lazy_updates: Apply the pulls to the arms :attr:`lazy_pulls` at a
                time and find each step's arm from bounds (the same arms); by
                default from :attr:`lazy_min_arms` arms on, on the CPU
                (:meth:`lazy_by_default`).
        """
        super().__init__(arms, generator=generator)
        # NaN passes ``<= 0`` checks, and failed later inside a Cholesky.
        if not (math.isfinite(noise_var) and noise_var > 0):
            raise InputDataError(
                f"noise_var must be finite and positive, got {noise_var}."
            )
        if isinstance(beta, str) and beta not in ("theory", "authors"):
            raise InputDataError(
                f"beta must be a number, 'theory' or 'authors'; got {beta!r}."
            )
        if not isinstance(beta, str) and not (math.isfinite(beta) and beta >= 0):
            raise InputDataError(f"beta must be finite and non-negative, got {beta}.")
        if not (math.isfinite(rkhs_norm) and rkhs_norm >= 0):
            raise InputDataError(
                f"rkhs_norm must be finite and non-negative, got {rkhs_norm}."
            )
        _check_kernel_like_arms(kernel, arms)
        self.kernel = kernel
        self.noise_var = float(noise_var)
        self.beta = beta
        self.noise_std = math.sqrt(noise_var) if noise_std is None else noise_std
        self.rkhs_norm = rkhs_norm
        self.delta = delta
        self.epsilon = self.default_epsilon if epsilon is None else epsilon
        self.refactorise_every = refactorise_every
        self.chunk_size = chunk_size
        if lazy_updates is None:
            lazy_updates = self.lazy_by_default(arms.shape[0], arms.device)
        self.lazy_updates = bool(lazy_updates)
        A = self.num_arms
        self._counts = arms.new_zeros(A)
        self._reward_sums = arms.new_zeros(A)
        # Single pulls not yet added to the two above (see ``counts``).
        self._held_pulls: list[int] = []
        self._held_rewards: list[float] = []
        # ``_pull_variance``'s products, for the rank-one update of that pull.
        self._pull_products: tuple | None = None
        self._score_buffer = arms.new_empty(A)
        self.num_observations = 0
        self._since_refactor = 0
        with torch.no_grad():
            self.prior_variance = torch.cat(
                [
                    kernel_diagonal(kernel, arms[rows])
                    for rows in row_chunks(A, chunk_size or chunk_size_for(1))
                ]
            )
            self.kappa2 = float(self.prior_variance.max())
            if isinstance(dictionary, int):
                _check_dictionary_size(dictionary)
                dictionary = torch.randperm(A, generator=self.generator)[:dictionary]
            if dictionary is None:
                dictionary = torch.zeros(0, dtype=torch.long)
            self._rebuild(_check_dictionary(dictionary, A).to(arms.device))

    @classmethod
    def lazy_by_default(cls, num_arms: int, device: torch.device) -> bool:
        r"""Whether pulls are held back when ``lazy_updates`` is not given.

        From :attr:`lazy_min_arms` arms on, on the CPU.
        """
        return device.type == "cpu" and num_arms >= cls.lazy_min_arms

    #: Single pulls held before one ``index_add_`` records them in
    #: :attr:`counts` and :attr:`reward_sums`.
    max_held_pulls: int = 1024

    @property
    def counts(self) -> Tensor:
        r"""The pulls of each arm so far (``A``)."""
        self._record_held_pulls()
        return self._counts

    @property
    def reward_sums(self) -> Tensor:
        r"""The sum of each arm's rewards so far (``A``)."""
        self._record_held_pulls()
        return self._reward_sums

    def _record_held_pulls(self) -> None:
        # A single pull is noted in two Python lists and added to the tensors
        # when they are read (an insertion, a redraw, a user), in two calls
        # for many pulls instead of two per pull; no step of a steady loop
        # reads them.
        if not self._held_pulls:
            return
        like = self._counts
        index = torch.tensor(self._held_pulls, device=like.device)
        rewards = torch.tensor(self._held_rewards, dtype=like.dtype, device=like.device)
        self._held_pulls, self._held_rewards = [], []
        self._counts.index_add_(0, index, torch.ones_like(rewards))
        self._reward_sums.index_add_(0, index, rewards)

    @property
    def dictionary_size(self) -> int:
        r"""The number of arms in the dictionary."""
        return int(self.dictionary.numel())

    @property
    def scaled_variance(self) -> Tensor:
        r"""``sigma_tilde^2 = var / lambda`` of all arms (the papers' scale)."""
        return self.candidates.variance / self.noise_var

    @property
    def mean(self) -> Tensor:
        r"""The posterior mean of all arms."""
        return self.candidates.mean

    def width(self) -> float:
        r"""The current ``beta_t``."""
        if not isinstance(self.beta, str):
            return float(self.beta)
        # ``sum_s sigma_tilde_t^2(x_s)`` over the pulls, each of noise lambda
        # (an arm rebuilt from ``n_i`` pulls enters with ``lambda / n_i``): the
        # posterior reads it in O(m) from ``tr(C)``, with no pass over the arms.
        return bkb_width(
            self.posterior.data_variance_sum(),
            self.num_observations,
            noise_std=self.noise_std,
            noise_var=self.noise_var,
            rkhs_norm=self.rkhs_norm,
            delta=self.delta,
            kappa2=self.kappa2,
            epsilon=self.epsilon,
            form=self.beta,
        )

    def scores(
        self, variance: Tensor | None = None, beta: float | None = None
    ) -> Tensor:
        r"""UCB scores ``mu + beta_t sigma_tilde`` of all arms.

        Args:
            variance: The ``A`` variances to use (GP units); the posterior's if None.
            beta: The width; :meth:`width` if None.
        """
        var = self.candidates.variance if variance is None else variance
        beta = self.width() if beta is None else beta
        return self.mean + beta * (var / self.noise_var).sqrt()

    def select(self, q: int = 1) -> Tensor:
        r"""Choose ``q`` arms greedily, hallucinating the earlier ones' pulls."""
        q = checked_count(q, "q")
        if q == 1 and self.num_observations > 0:
            # No tensor here requires grad: no ``no_grad`` context to enter.
            return self._select_one()
        if torch.is_grad_enabled():
            with torch.no_grad():
                return self.select(q)
        chosen = []
        variance = self.candidates.variance
        columns: list[Tensor] = []
        beta = self.width()
        for j in range(q):
            if self.num_observations == 0 and j == 0:
                idx = torch.randint(self.num_arms, (1,), generator=self.generator)[0]
                idx = idx.to(self.arms.device)
            else:
                idx = argmax_first(self.scores(variance, beta))
            chosen.append(idx)
            if j == q - 1:
                break
            # Condition the posterior process on a pending observation at idx:
            # one step of a pivoted Cholesky of its covariance over the arms.
            col = self.candidates.covariance_column(idx, self.posterior)
            for prev in columns:
                col = col - prev * prev[idx]
            col = col / (col[idx].clamp_min(0) + self.noise_var).sqrt()
            columns.append(col)
            variance = (variance - col.pow(2)).clamp_min(0)
        return torch.stack(chosen)

    def _select_one(self) -> Tensor:
        # select(1) with the scores in a preallocated buffer: the loop's hot
        # path, three O(A) kernels. ``scores`` up to rounding: ``beta /
        # sqrt(lambda)`` is folded into one fused ``mean + beta' sqrt(var)``.
        alpha = self.width() / math.sqrt(self.noise_var)
        return self.candidates.ucb_argmax(alpha, self._score_buffer)

    def update(self, indices: Tensor, rewards: Tensor) -> None:
        r"""Record the pulls and update the posterior of every arm."""
        indices, rewards, index_list, reward_list = self._checked_feedback(
            indices, rewards
        )
        if len(index_list) == 1 and self._has_single_pull_path():
            # One pull: a rank-one update in place, with no q x q algebra. The
            # tracked tensors never require grad, and the steps that evaluate
            # the kernel (``_insert``, ``_rebuild``) turn grad off themselves,
            # so no ``no_grad`` context is entered per step.
            i, r = index_list[0], reward_list[0]
            self._grow_one(indices, i)
            self._held_pulls.append(i)
            self._held_rewards.append(r)
            if len(self._held_pulls) >= self.max_held_pulls:
                self._record_held_pulls()
            self.num_observations += 1
            self._absorb_one(indices, rewards, i, r)
            return
        if torch.is_grad_enabled():
            with torch.no_grad():
                return self.update(indices, rewards)
        previous = self.scaled_variance
        self._grow(indices, previous)
        self.counts.index_add_(0, indices, torch.ones_like(rewards))
        self.reward_sums.index_add_(0, indices, rewards)
        self.num_observations += indices.numel()
        self._absorb(indices, rewards, previous)

    def _absorb(self, indices: Tensor, rewards: Tensor, previous: Tensor) -> None:
        # A rank-q update of the posterior and of every arm, with a periodic
        # refactorisation; subclasses change the dictionary here instead.
        self._rank_update(indices, rewards)

    @classmethod
    def _has_single_pull_path(cls) -> bool:
        # A subclass that changes ``_absorb`` but not ``_absorb_one`` keeps the
        # general route, so its rule is never bypassed.
        return cls._absorb is DTCUCB._absorb or cls._absorb_one is not (
            DTCUCB._absorb_one
        )

    def _grow_one(self, indices: Tensor, index: int) -> None:
        # ``_grow`` for one pull (``indices`` holds ``index``); subclasses with a
        # cheaper single-pull rule override this. A fixed dictionary does not
        # grow: no O(A) variance read for a hook that does nothing.
        if type(self)._grow is not DTCUCB._grow:
            self._grow(indices, self.scaled_variance)

    def _absorb_one(
        self, indices: Tensor, rewards: Tensor, index: int, reward: float
    ) -> None:
        # ``_absorb`` for one pull.
        self._rank_update_one(index, reward)

    def _rank_update(self, indices: Tensor, rewards: Tensor) -> None:
        cands = self.candidates
        update = self.posterior.update(
            cands.Z[indices],
            cands.residual[indices],
            rewards,
            torch.full_like(rewards, self.noise_var),
        )
        cands.apply(update)
        self._count_towards_refactor(indices.numel())

    def _pull_variance(self, index: int) -> float:
        r"""The current posterior variance of arm ``index`` (GP units), as a float.

        Read from the weight posterior, ``k - ||z||^2 + z^T C z``, with the
        products kept for the rank-one update of the same pull (a rule that
        decides on the pulled arm's variance, BKB's coin, then costs no torch
        call of its own). Equal to ``candidates.variance[index]`` up to the
        rounding of the recursive updates.
        """
        posterior = self.posterior
        z = self.candidates.Z[index]
        residual = float(self.candidates.residual[index])
        product = posterior.product_one(z)
        self._pull_products = (index, posterior, posterior.dim, z, residual, product)
        return residual + product.quadratic

    def _rank_update_one(self, index: int, reward: float) -> None:
        cands = self.candidates
        kept, self._pull_products = self._pull_products, None
        posterior = self.posterior
        if (
            kept is not None
            and kept[0] == index
            and kept[1] is posterior
            and kept[2] == posterior.dim
        ):
            # Nothing changed the posterior since ``_pull_variance``.
            z, residual, product = kept[3:]
        else:
            z, residual, product = cands.Z[index], float(cands.residual[index]), None
        P, s, coefficient = posterior.update_one_(
            z, residual, reward, self.noise_var, product=product
        )
        cands.apply_one(P, s, coefficient, q=s - self.noise_var)
        self._count_towards_refactor(1)

    def _count_towards_refactor(self, pulls: int) -> None:
        self._since_refactor += pulls
        if self._since_refactor >= self.refactorise_every:
            self.posterior.refactorise()
            self.candidates.refresh(self.posterior)
            self._since_refactor = 0

    def _grow(self, indices: Tensor, previous: Tensor) -> None:
        # Hook, before the pulls are recorded: dictionaries that grow with the
        # pulled arms (exact GP-UCB, adaptive BKB) insert them here.
        pass

    @torch.no_grad()
    def _insert(self, index: int) -> bool:
        r"""Add arm ``index`` to the dictionary, keeping the posterior current.

        The embedding is bordered (``O(m^2)``), every arm gets its new coordinate
        (``O(A m)``), the recorded pulls' statistics gain a row and column
        (``O(u m)`` over the ``u`` pulled arms) and the weight posterior and the
        arms' means and variances follow by a block inverse (``O(m^2 + A m)``).

        Returns:
            False if the arm is already in the numerical span (nothing changes).
        """
        self._pull_products = None
        cands = self.candidates
        # The arm's embedding and prior variance are tracked: no kernel call.
        embedding = self.embedding.extended(
            self.arms[index],
            z_new=cands.Z[index],
            k_new=self.prior_variance[index : index + 1],
        )
        if embedding is None:
            return False
        m = cands.dim
        c = cands.extend_embedding(embedding)
        # Each pulled arm enters as one observation of its mean reward with
        # noise lambda / n_i, as in ``_rebuild``.
        pulled = self.counts.nonzero().squeeze(-1)
        n = self.counts[pulled]
        border = self.posterior.extend_with_data(
            cands.Z[pulled, :m],
            c[pulled],
            self.reward_sums[pulled] / n,
            self.noise_var / n,
        )
        cands.apply_border(border)
        self.embedding = embedding
        self.dictionary = torch.cat(
            [self.dictionary, self.dictionary.new_tensor([index])]
        )
        self._in_dictionary[index] = True
        return True

    @torch.no_grad()
    def _rebuild(self, dictionary: Tensor) -> None:
        # Embed every arm in the new dictionary and refit from the pull counts:
        # arm i with n_i pulls enters as one observation of its mean reward with
        # noise lambda / n_i, which has the same statistics as its n_i pulls.
        self._pull_products = None
        self.dictionary = dictionary
        self._in_dictionary = torch.zeros(
            self.num_arms, dtype=torch.bool, device=self.arms.device
        )
        self._in_dictionary[dictionary] = True
        lazy = self.lazy_updates
        self.embedding, cands = TrackedCandidates.from_subset(
            self.kernel,
            self.arms,
            dictionary,
            self.prior_variance,
            self.chunk_size,
            by_point=lazy,
        )
        pulled = self.counts.nonzero().squeeze(-1)
        if pulled.numel():
            n = self.counts[pulled]
            stats = DTCStatistics.from_embedded(
                cands.Z[pulled],
                cands.residual[pulled],
                self.reward_sums[pulled] / n,
                self.noise_var / n,
            )
        else:
            stats = DTCStatistics.empty(self.embedding.dim, like=self.arms)
        self.posterior = WeightPosterior(stats)
        cands.refresh(self.posterior)
        if lazy:
            cands.lazy_pulls = self.lazy_pulls
        self.candidates = cands
        self._since_refactor = 0
