#!/usr/bin/env python3
r"""Large-batch Thompson sampling as an ask/tell optimizer.

:class:`LargeBatchOptimizer` holds the state of
:func:`~botorch_sketch.bo.large_batch.run_large_batch`'s loop (observations,
trust regions, the carried surrogate, the Sobol sequence and random streams)
and lets the caller decide when points are evaluated:

- :meth:`~LargeBatchOptimizer.ask` returns ``n`` points: the scrambled Sobol
  design first, then pathwise Thompson samples of the carried model;
- :meth:`~LargeBatchOptimizer.tell` takes results for any subset of the asked
  points, in any order; NaN, infinity or ``failed=True`` records a failure,
  which is never modelled and never proposed again;
- points asked and not yet told are *pending*. A later ask conditions the
  model it samples from on them at its posterior mean (a Woodbury step of the
  carried ``NystromGP``, "kriging believer" fantasies): the mean is
  unchanged and the paths' variance collapses there, so samples stop piling up
  around points in flight. Every proposal is also checked against every point
  ever proposed and told, and an exact repeat is moved by a small perturbation,
  so no point is proposed twice (``pending="exclude"`` keeps only this check);
- :meth:`~LargeBatchOptimizer.state_dict` and
  :meth:`~LargeBatchOptimizer.save` write the whole state as plain tensors,
  numbers and strings (:mod:`~botorch_sketch.bo.checkpoint`), and
  :meth:`~LargeBatchOptimizer.load` resumes it to the same proposals as an
  uninterrupted run. Points pending at the save are asked again first after a
  resume.

BoTorch's pathwise draws and the surrogate's rules draw from torch's global
random generator; the optimizer keeps its own torch random state and swaps it
in around those calls (:meth:`~LargeBatchOptimizer.random_state`), so a
caller's stream is left alone and a resumed run continues the same stream.

Example:
    >>> from botorch.test_functions import Hartmann
    >>> f = Hartmann(dim=6, negate=True)
    >>> optimizer = LargeBatchOptimizer(f.bounds, q=20, seed=0)
    >>> for _ in range(10):
    ...     X = optimizer.ask(20)
    ...     optimizer.tell(X, f(X))
    >>> optimizer.best()
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
from typing import Any

import torch
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.models.model import Model
from botorch.utils.sampling import draw_sobol_samples
from botorch.utils.transforms import normalize, unnormalize
from gpytorch.settings import skip_posterior_variances
from torch import Tensor
from torch.quasirandom import SobolEngine

from botorch_sketch.bo import checkpoint
from botorch_sketch.bo.incremental_gp import IncrementalGP
from botorch_sketch.bo.regions import TrustRegions
from botorch_sketch.bo.streams import TorchStream
from botorch_sketch.bo.thompson import (
    candidate_set,
    check_region,
    default_surrogate,
    posterior_incumbents,
    reflect,
    thompson_batch,
)
from botorch_sketch.bo.trust_region import TurboState
from botorch_sketch.checks import checked_count, checked_memory, checked_real

#: How the model a proposal samples from treats pending points.
PENDING_MODES = ("fantasize", "exclude")

#: Bytes a point asked holds in the optimizer's books (keys, rows, dict entries;
#: measured about 1.6 kB plus 22 bytes per dimension).
_REGISTERED_BYTES = 2048

#: How far outside the unit cube a checkpoint's points may lie (float64 round
#: trips of points on a face); further is refused at load.
_UNIT_SLACK = 1e-6

#: The columns of :attr:`LargeBatchOptimizer.log`, one row per ask that used
#: the model: results told before it, points it proposed, its seconds, and the
#: model's and regions' state.
LOG_COLUMNS = (
    "told",
    "asked",
    "model_seconds",
    "refitted",
    "incumbent_seconds",
    "fantasy_seconds",
    "batch_seconds",
    "train_size",
    "inducing_size",
    "distinct_argmaxes",
    "region_length",
    "restarts",
    "pending",
)


@dataclasses.dataclass
class AskRecord:
    r"""What the last :meth:`LargeBatchOptimizer.ask` that used the model did.

    Attributes:
        model_seconds: CPU seconds of the surrogate's call.
        refitted: Whether it built or refitted the model.
        incumbent_seconds: CPU seconds of the regions' update and candidates.
        batch_seconds: CPU seconds of the Thompson batch.
        fantasy_seconds: CPU seconds of conditioning on the pending points.
        train_size: Observations the model was given.
        inducing_size: The model's inducing set's size (0 if it has none).
        distinct_argmaxes: Distinct argmaxes of the paths over the candidates.
        pending: Pending points the model was conditioned on.
        moved: Proposals moved off an exact repeat.
    """

    model_seconds: float = 0.0
    refitted: bool = False
    incumbent_seconds: float = 0.0
    batch_seconds: float = 0.0
    fantasy_seconds: float = 0.0
    train_size: int = 0
    inducing_size: int = 0
    distinct_argmaxes: int = 0
    pending: int = 0
    moved: int = 0


def _key(x: Tensor) -> bytes:
    return x.detach().cpu().contiguous().numpy().tobytes()


def best_observation(
    train_X: Tensor, train_Y: Tensor, bounds: Tensor
) -> tuple[Tensor, float]:
    r"""The largest finite observation and its point, mapped into ``bounds``.

    Args:
        train_X: A ``n x d`` tensor of points in the unit cube.
        train_Y: A ``n x 1`` tensor of their finite observations.
        bounds: A ``2 x d`` tensor of the search box.

    Returns:
        A ``d`` tensor and the value (NaNs and ``-inf`` when ``n = 0``).
    """
    if train_Y.shape[0] == 0:
        return torch.full((bounds.shape[-1],), math.nan).to(bounds), -math.inf
    i = int(train_Y.argmax())
    return unnormalize(train_X[i], bounds), float(train_Y[i])


class LargeBatchOptimizer(TorchStream):
    r"""Ask/tell large-batch Thompson sampling in trust regions (maximises)."""

    def __init__(
        self,
        bounds: Tensor,
        q: int = 100,
        num_initial: int | None = None,
        surrogate: Any | None = None,
        num_candidates: int | None = None,
        num_local: int = 8,
        num_incumbents: int = 20,
        trust_region: bool = True,
        num_regions: int = 2,
        seed: int = 0,
        pending: str = "fantasize",
        success: str = "pessimistic",
        region_share: float = 0.5,
        num_features: int = 1024,
    ) -> None:
        r"""Configure the optimizer; nothing is drawn or fitted yet.

        Args:
            bounds: A ``2 x d`` tensor of the search box (finite, lower < upper).
            q: The batch size the trust regions count successes and failures
                in (TuRBO's tolerances); :meth:`ask` takes any ``n``.
            num_initial: The scrambled Sobol design's size (default ``q``).
            surrogate: All finite data (unit cube, ``n x d``; ``n x 1``) to a
                fitted model; default
                :func:`~botorch_sketch.bo.thompson.default_surrogate`. An
                :class:`IncrementalGP` is saved with the checkpoint; any other
                callable must be stateless for a resume to be exact.
            num_candidates: The shared candidate set's size (default
                ``max(1000, 5 q)``: with as many paths as candidates, paths peak
                at the same candidates and fall back to perturbations of them;
                at ``q = 1000`` on Levy-100, 5000 candidates reached -124 and
                -150 after 5 x 10^4 evaluations where 1000 stalled at -331 and
                -250).
            num_local: Perturbations each path scores around its own argmax.
            num_incumbents: Without a trust region, how many observed inputs of
                largest posterior mean the candidates perturb.
            trust_region: Candidates in TuRBO trust regions (True), or in the
                whole box.
            num_regions: How many trust regions share the model.
            seed: Seeds the design, the candidates and the paths.
            pending: ``"fantasize"`` conditions the sampled model on pending
                points at its posterior mean; ``"exclude"`` only refuses exact
                repeats.
            success: How the trust regions score their points, one of
                :data:`~botorch_sketch.bo.regions.SUCCESS_RULES` (see
                :class:`~botorch_sketch.bo.regions.TrustRegions`).
            region_share: The share of each batch's paths reserved to the
                trust regions in equal parts: a reserved path takes its
                maximum over its region's candidates alone, the others over
                every region's. Without it a region the model reads as worse
                gets no points, and the model, whose inducing points follow the
                data, never learns what the region holds (see
                :class:`~botorch_sketch.bo.regions.TrustRegions`).
            num_features: Random Fourier features of each Thompson path's
                prior part; a path costs ``O(m + F)`` per candidate.
        """
        check_region(bounds, "bounds")
        if not bool((bounds[1] > bounds[0]).all()):
            raise InputDataError(f"bounds must have lower < upper; got {bounds}.")
        for name, flag in (("trust_region", trust_region),):
            if not isinstance(flag, bool):
                raise InputDataError(f"{name} must be True or False, got {flag!r}.")
        if pending not in PENDING_MODES:
            raise InputDataError(
                f"pending must be one of {PENDING_MODES}, got {pending!r}."
            )
        if surrogate is not None and not callable(surrogate):
            raise InputDataError(
                "surrogate must be callable (X, Y) -> model; got "
                f"{type(surrogate).__name__}."
            )
        self.q = checked_count(q, "q")
        self.num_initial = checked_count(
            self.q if num_initial is None else num_initial, "num_initial"
        )
        self._default_candidates = num_candidates is None
        if num_candidates is None:
            num_candidates = max(1000, 5 * self.q)
        self.num_candidates = checked_count(num_candidates, "num_candidates")
        self.num_local = checked_count(num_local, "num_local")
        self.num_incumbents = checked_count(num_incumbents, "num_incumbents")
        self.num_regions = checked_count(num_regions, "num_regions")
        self.region_share = checked_real(region_share, "region_share")
        if not 0.0 <= self.region_share <= 1.0:
            raise InputDataError(
                f"region_share must lie in [0, 1], got {region_share!r}."
            )
        self.num_features = checked_count(num_features, "num_features")
        self.seed = checked_count(seed, "seed", minimum=0)
        self.trust_region = trust_region
        self.pending_mode = pending
        self.bounds = bounds.detach().to(torch.double).clone()
        self.dim = d = self.bounds.shape[-1]
        # Sizes whose tensors would not fit, refused before any is drawn.
        checked_memory(self.q, self._point_bytes(), "q", self._paths(note=True))
        checked_memory(
            self.num_initial, _REGISTERED_BYTES + 64 * d, "num_initial",
            "design points",
        )  # fmt: skip
        checked_memory(
            self.num_candidates, 8 * (2 * self.num_features + 4 * d),
            "num_candidates", f"candidates of {self.num_features} features each",
        )  # fmt: skip
        self._unit = torch.stack([torch.zeros(d), torch.ones(d)]).to(self.bounds)
        self.surrogate = default_surrogate() if surrogate is None else surrogate
        self.generator = torch.Generator().manual_seed(self.seed)
        self._seed_torch(self.seed)
        self._design = draw_sobol_samples(
            self._unit, n=self.num_initial, q=1, seed=self.seed
        ).squeeze(1)
        self._design_asked = 0
        # One scrambled sequence for every candidate set (the design's own,
        # continued); another for design points beyond the first.
        self.engine = SobolEngine(d, scramble=True, seed=self.seed)
        self.engine.fast_forward(self.num_initial)
        self._extra = SobolEngine(d, scramble=True, seed=self.seed + 1)
        self.regions = TrustRegions(
            d,
            self.q,
            self.num_regions,
            engine=self.engine,
            generator=self.generator,
            success=success,
        )
        # Finite observations in the unit cube, in the order told.
        self.train_X = self._unit.new_zeros(0, d)
        self.train_Y = self._unit.new_zeros(0, 1)
        # Every result told (failures as NaN), in the order told.
        self.told_X = self._unit.new_zeros(0, d)
        self.told_Y = self._unit.new_zeros(0, 1)
        # Pending points: id -> (unit point, point in bounds, region or -1).
        self._pending: dict[int, tuple[Tensor, Tensor, int]] = {}
        self._by_key: dict[bytes, int] = {}
        self._reissue: list[int] = []
        self._next_id = 0
        self._seen: set[bytes] = set()
        self._told_keys: set[bytes] = set()
        # Finite points told since the regions last read them, with owners.
        self._new_X = self._unit.new_zeros(0, d)
        self._new_Y = self._unit.new_zeros(0, 1)
        self._new_owner = torch.zeros(0, dtype=torch.long)
        # Results told (failures included) since the regions last read them:
        # they count successes and failures per ``q`` results, as TuRBO does.
        self._new_told = 0
        self.last_ask = AskRecord()
        self.asks = 0
        # One row per ask that used the model (see ``LOG_COLUMNS``).
        self.log: list[list[float]] = []

    # --------------------------------------------------------------- views

    @property
    def pending(self) -> Tensor:
        r"""A ``p x d`` tensor of the points asked and not told (in bounds)."""
        rows = [raw for _, raw, _ in self._pending.values()]
        return torch.stack(rows) if rows else self.bounds.new_zeros(0, self.dim)

    @property
    def region_length(self) -> float:
        r"""The largest trust region's length (NaN without trust regions)."""
        return max(self.regions.lengths) if self.trust_region else math.nan

    @property
    def restarts(self) -> int:
        r"""Trust-region restarts so far."""
        return self.regions.restarts

    @property
    def num_told(self) -> int:
        r"""Results told so far, failures included."""
        return self.told_X.shape[0]

    @property
    def num_failed(self) -> int:
        r"""Failures told so far."""
        return int(torch.isnan(self.told_Y).sum())

    def best(self) -> tuple[Tensor, float]:
        r"""The best finite observation so far and its point (in bounds).

        Returns:
            A ``d`` tensor and the value (``-inf`` and NaNs before any).
        """
        return best_observation(self.train_X, self.train_Y, self.bounds)

    # ----------------------------------------------------------------- ask

    def ask(self, n: int = 1) -> Tensor:
        r"""``n`` new points: points pending at a resume, the design, then samples.

        Args:
            n: How many points.

        Returns:
            A ``n x d`` tensor in ``bounds``, each pending until told.
        """
        n = checked_count(n, "n")
        if n > len(self._reissue) + self.num_initial - self._design_asked:
            # Beyond the points drawn already: a batch of ``n`` paths.
            checked_memory(n, self._point_bytes(), "n", self._paths())
        out: list[Tensor] = []
        while self._reissue and len(out) < n:
            i = self._reissue.pop(0)
            if i in self._pending:
                out.append(self._pending[i][1])
        if len(out) == n:
            return torch.stack(out)
        take = min(n - len(out), self.num_initial - self._design_asked)
        units: list[Tensor] = []
        owners: list[Tensor] = []
        if take > 0:
            start = self._design_asked
            units.append(self._design[start : start + take])
            owners.append(torch.full((take,), -1, dtype=torch.long))
            self._design_asked += take
        rest = n - len(out) - take
        if rest > 0 and self.train_X.shape[0] == 0:
            # Nothing finite to model yet: more of a (second) Sobol sequence.
            units.append(self._extra.draw(rest, dtype=torch.double).to(self._unit))
            owners.append(torch.full((rest,), -1, dtype=torch.long))
        elif rest > 0:
            with self.random_state():
                X, owner = self._propose(rest)
            units.append(X)
            owners.append(owner)
        if units:
            unit = torch.cat(units)
            self._register(unit, torch.cat(owners), out)
        self.asks += 1
        return torch.stack(out)

    def _point_bytes(self) -> float:
        # The memory a point of a Thompson batch needs at once: its path's
        # values at the candidates (a few ``N`` copies) and its feature
        # weights and values at its own perturbations (``(2 L + 3) F``), its
        # registration besides (measured: 178 kB a point at N = 1000,
        # F = 1024, L = 8; 607 kB at N = 20000).
        N, F, L = self.num_candidates, self.num_features, self.num_local
        return 8 * (3 * N + (2 * L + 3) * F) + _REGISTERED_BYTES + 64 * self.dim

    def _paths(self, note: bool = False) -> str:
        note = note and self._default_candidates
        default = " (max(1000, 5 q) by default)" if note else ""
        return f"Thompson paths over {self.num_candidates} candidates{default}"

    def _register(self, unit: Tensor, owner: Tensor, out: list[Tensor]) -> None:
        raw = unnormalize(unit, self.bounds)
        for x, r, k in zip(unit, raw, owner.tolist(), strict=True):
            key = _key(r)
            self._seen.add(_key(x))
            self._pending[self._next_id] = (x, r, k)
            self._by_key[key] = self._next_id
            self._next_id += 1
            out.append(r)

    def _propose(self, b: int) -> tuple[Tensor, Tensor]:
        # One step of the loop: the model, the regions, the Thompson batch.
        X, Y = self.train_X, self.train_Y
        record = AskRecord(train_size=X.shape[0])
        start = time.process_time()
        model = self.surrogate(X, Y)
        fitted = time.process_time()
        if not isinstance(model, Model):
            raise InputDataError(
                f"The surrogate returned {type(model).__name__}, not a BoTorch Model."
            )
        counts = getattr(self.surrogate, "counts", None)
        record.refitted = counts is not None and counts.last in ("built", "refit")
        if self.trust_region:
            regions = self.regions
            read = True
            if not regions.centres:
                regions.start(model, X, self.num_candidates)
            elif self._new_told < self.q:
                # Fewer than ``q`` results since the last read (an
                # asynchronous loop asks for a few points at a time): a
                # batch of TuRBO's counters is ``q`` results, not one ask.
                read = False
            elif self._new_X.shape[0] > 0:
                # Success: a mean better by 1% of the observations' spread.
                tolerance = 0.01 * float(Y.std())
                regions.update(
                    model,
                    self._new_X,
                    self._new_owner,
                    self.num_candidates,
                    tolerance,
                    new_Y=self._new_Y,
                )
            located = time.process_time()
            candidates, region = regions.candidates(model, self.num_candidates)
            owners = torch.arange(self.num_regions).repeat_interleave(
                candidates.shape[0] // self.num_regions
            )
            # With one region every path sees its candidates anyway.
            share = self.region_share if self.num_regions > 1 else 0.0
            reserved = int(share * b) // self.num_regions
        else:
            region = self._unit
            reserved = 0
            incumbents = posterior_incumbents(model, X, self.num_incumbents)
            located = time.process_time()
            candidates = candidate_set(
                incumbents, self._unit, self.num_candidates, generator=self.generator
            )
        if not self.trust_region or read:
            self._new_X = X[:0]
            self._new_Y = Y[:0]
            self._new_owner = self._new_owner[:0]
            self._new_told = 0
        sampled = model
        if self._pending and self.pending_mode == "fantasize":
            sampled = self._fantasy(model)
            record.pending = len(self._pending)
        fantasised = time.process_time()
        batch = thompson_batch(
            sampled,
            candidates,
            b,
            region,
            num_local=self.num_local,
            generator=self.generator,
            groups=owners if self.trust_region else None,
            reserved=reserved,
            num_features=self.num_features,
        )
        proposals, record.moved = self._unrepeated(batch.X)
        done = time.process_time()
        if self.trust_region:
            owner = owners[batch.argmax.cpu()]
        else:
            owner = torch.full((b,), -1, dtype=torch.long)
        index = getattr(model, "inducing_index", None)
        record.model_seconds = fitted - start
        record.incumbent_seconds = located - fitted
        record.fantasy_seconds = fantasised - located
        record.batch_seconds = done - fantasised
        record.inducing_size = 0 if index is None else int(index.numel())
        record.distinct_argmaxes = batch.distinct_argmaxes
        self.last_ask = record
        lengths = self.regions.lengths if self.trust_region else [math.nan]
        self.log.append(
            [
                float(self.num_told),
                float(b),
                record.model_seconds,
                float(record.refitted),
                record.incumbent_seconds,
                record.fantasy_seconds,
                record.batch_seconds,
                float(record.train_size),
                float(record.inducing_size),
                float(record.distinct_argmaxes),
                float(max(lengths)),
                float(self.regions.restarts),
                float(record.pending),
            ]
        )
        return proposals, owner

    def _fantasy(self, model: Model) -> Model:
        # The model conditioned on the pending points at its posterior mean.
        P = torch.stack([x for x, _, _ in self._pending.values()])
        try:
            with torch.no_grad(), skip_posterior_variances():
                mean = model.posterior(P).mean.reshape(-1, 1)
                return model.condition_on_observations(P, mean.detach())
        except (NotImplementedError, UnsupportedError) as e:
            raise UnsupportedError(
                f"{type(model).__name__} cannot be conditioned on pending points "
                f"({e}); use pending='exclude'."
            ) from e

    def _unrepeated(self, X: Tensor) -> tuple[Tensor, int]:
        # Exact repeats of points proposed before (or in this batch) moved by
        # a small perturbation inside the unit cube; no draw without a repeat.
        moved, keys = 0, set()
        rows = list(X)
        for i, x in enumerate(rows):
            while _key(x) in self._seen or _key(x) in keys:
                noise = torch.randn(x.shape, generator=self.generator, dtype=x.dtype)
                x = reflect(x + 1e-6 * noise.to(x), self._unit)
                moved += 1
            rows[i] = x
            keys.add(_key(x))
        return (torch.stack(rows) if moved else X), moved

    # ---------------------------------------------------------------- tell

    def tell(self, X: Tensor, Y: Tensor, failed: Tensor | None = None) -> None:
        r"""Record results for any subset of the asked points, in any order.

        A row within rounding of one pending point is that point's result:
        ``X.float()`` or a copy sent through float32 or half precision tells
        the asked points, and the point recorded is the one asked (a row
        within rounding of several pending points, none of which it equals
        at its own precision, is refused). Any other row is a point evaluated
        by other means.

        Args:
            X: A ``b x d`` tensor of points in ``bounds``: asked points (as
                returned by :meth:`ask`, or copies of them at a lower
                precision) or points evaluated by other means.
            Y: A ``b`` or ``b x 1`` tensor of observations; NaN or infinity
                marks a failure.
            failed: An optional ``b`` bool tensor: True marks a failure
                whatever its ``Y``.
        """
        X, precision = self._checked_points(X)
        b = X.shape[0]
        try:
            Y = torch.as_tensor(Y, dtype=torch.double)
        except (TypeError, ValueError, RuntimeError) as e:
            raise InputDataError(
                f"Y must be a tensor of {b} observations; got {type(Y).__name__}."
            ) from e
        if Y.numel() != b or not (Y.dim() <= 1 or Y.shape == (b, 1)):
            raise InputDataError(
                f"Y has shape {tuple(Y.shape)} for {b} points; expected ({b},) or "
                f"({b}, 1)."
            )
        Y = Y.reshape(b, 1).to(self._unit)
        bad = ~torch.isfinite(Y).squeeze(-1)
        if failed is not None:
            failed = torch.as_tensor(failed)
            if failed.dtype != torch.bool or failed.shape != (b,):
                raise InputDataError(
                    f"failed must be a bool tensor of shape ({b},); got "
                    f"{failed.dtype} {tuple(failed.shape)}."
                )
            bad = bad | failed.cpu()
        keys = [_key(x) for x in X]
        if len(set(keys)) < b:
            raise InputDataError("X holds the same point twice.")
        for key in keys:
            if key in self._told_keys:
                raise InputDataError(
                    "A result for this point was told already; every point is "
                    "told once."
                )
        ids = self._pending_ids(X, keys, precision)
        units, owners = [], []
        for x, i in zip(X, ids, strict=True):
            if i is None:
                # Within the bounds' slack of a face: on it (a checkpoint's
                # points lie in the unit cube).
                unit = normalize(x, self.bounds).clamp(0.0, 1.0)
                self._seen.add(_key(unit))
                units.append(unit)
                owners.append(-1)
            else:
                unit, raw, owner = self._pending.pop(i)
                del self._by_key[_key(raw)]
                # The asked point is told, whatever precision it came back in.
                self._told_keys.add(_key(raw))
                units.append(unit)
                owners.append(owner)
        self._told_keys.update(keys)
        unit = torch.stack(units)
        owner = torch.tensor(owners, dtype=torch.long)
        keep = ~bad
        y = torch.where(bad.unsqueeze(-1).to(Y.device), math.nan, Y)
        self.told_X = torch.cat([self.told_X, unit])
        self.told_Y = torch.cat([self.told_Y, y])
        self.train_X = torch.cat([self.train_X, unit[keep]])
        self.train_Y = torch.cat([self.train_Y, Y[keep]])
        self._new_X = torch.cat([self._new_X, unit[keep]])
        self._new_Y = torch.cat([self._new_Y, Y[keep]])
        self._new_owner = torch.cat([self._new_owner, owner[keep]])
        self._new_told += b

    def forget(self, X: Tensor) -> None:
        r"""Drop pending points that will never be told (e.g. cancelled).

        They are not proposed again (use :meth:`tell` with ``failed`` to record
        them as failures instead).

        Args:
            X: A ``b x d`` tensor of pending points.
        """
        X, precision = self._checked_points(X)
        keys = [_key(x) for x in X]
        for x, i in zip(X, self._pending_ids(X, keys, precision), strict=True):
            if i is None:
                raise InputDataError(f"{x.tolist()} is not pending.")
            _, raw, _ = self._pending.pop(i)
            del self._by_key[_key(raw)]

    def requeue(self, X: Tensor) -> None:
        r"""Hand pending points out again, first, at the next :meth:`ask`.

        For points whose evaluation was abandoned (a run stopped with them in
        flight): they stay pending, as points in flight at a checkpoint's
        save do at its resume.

        Args:
            X: A ``b x d`` tensor of pending points.
        """
        X, precision = self._checked_points(X)
        keys = [_key(x) for x in X]
        ids = self._pending_ids(X, keys, precision)
        for x, i in zip(X, ids, strict=True):
            if i is None:
                raise InputDataError(f"{x.tolist()} is not pending.")
        queued = set(self._reissue)
        self._reissue.extend(i for i in ids if i not in queued)

    def _pending_ids(
        self, X: Tensor, keys: list[bytes], precision: torch.dtype
    ) -> list[int | None]:
        # The pending point each row of ``X`` (in bounds, float64) stands for:
        # the one it equals, else the one within rounding at the precision the
        # caller passed (a float32 copy of an asked point is that point), else
        # None (a point evaluated by other means).
        ids: list[int | None] = [self._by_key.get(key) for key in keys]
        if all(i is not None for i in ids) or not self._pending:
            return ids
        pending = list(self._pending)
        raw = torch.stack([self._pending[i][1] for i in pending])
        tolerance = self._rounding(precision)
        claimed = {i for i in ids if i is not None}
        for row, x in enumerate(X):
            if ids[row] is not None:
                continue
            near = ((raw - x).abs() <= tolerance).all(-1).nonzero().flatten()
            found = [pending[j] for j in near.tolist() if pending[j] not in claimed]
            if len(found) > 1:
                # Several within rounding: the one ``x`` equals at its precision.
                found = [
                    i
                    for i in found
                    if torch.equal(self._pending[i][1].to(precision).to(x), x)
                ]
                if len(found) != 1:
                    name = str(precision).removeprefix("torch.")
                    raise InputDataError(
                        f"X's row {row} ({x.tolist()}) lies within {name} "
                        f"rounding of {len(near)} pending points and cannot be "
                        "told apart from them; tell the points as ask returned "
                        "them (float64)."
                    )
            if found:
                ids[row] = found[0]
                claimed.add(found[0])
        return ids

    def _rounding(self, precision: torch.dtype) -> Tensor:
        # How far from a point in bounds its copy at ``precision`` may lie, in
        # each coordinate: rounding moves a coordinate by at most half its
        # spacing (``eps * |value| / 2``); 1e-9 of the box covers float64 round
        # trips (a point on a face read back a little outside it).
        eps = torch.finfo(precision).eps if precision.is_floating_point else 0.0
        scale = self.bounds.abs().max(0).values
        return torch.maximum(eps * scale, 1e-9 * (self.bounds[1] - self.bounds[0]))

    def _checked_points(self, X: Tensor) -> tuple[Tensor, torch.dtype]:
        # ``X`` in float64, and the precision the caller passed it in.
        if (
            not isinstance(X, Tensor)
            or X.dim() != 2
            or X.shape[-1] != self.dim
            or X.shape[0] == 0
        ):
            raise InputDataError(
                f"X must be a non-empty b x {self.dim} tensor; got "
                f"{tuple(X.shape) if isinstance(X, Tensor) else type(X).__name__}."
            )
        precision = X.dtype
        X = X.detach().to(self.bounds)
        if not bool(torch.isfinite(X).all()):
            raise InputDataError("X contains NaN or infinite values.")
        slack = self._rounding(precision)
        outside = (X < self.bounds[0] - slack) | (X > self.bounds[1] + slack)
        if bool(outside.any()):
            row = int(outside.any(-1).nonzero()[0])
            raise InputDataError(
                f"X's row {row} ({X[row].tolist()}) lies outside the bounds."
            )
        return X, precision

    # --------------------------------------------------------------- state

    def config(self) -> dict[str, Any]:
        r"""The settings a checkpoint must match to be resumed by this object."""
        return {
            "dim": self.dim,
            "bounds": self.bounds.clone(),
            "q": self.q,
            "num_initial": self.num_initial,
            "num_candidates": self.num_candidates,
            "num_local": self.num_local,
            "num_incumbents": self.num_incumbents,
            "trust_region": self.trust_region,
            "num_regions": self.num_regions,
            "seed": self.seed,
            "pending": self.pending_mode,
            "success": self.regions.success,
            "region_share": self.region_share,
            "num_features": self.num_features,
            "surrogate": type(self.surrogate).__name__,
        }

    def state_dict(self) -> dict[str, Any]:
        r"""The optimizer's whole state as tensors, numbers, strings and lists.

        Returns:
            A dict that :func:`~botorch_sketch.bo.checkpoint.save_checkpoint`
            writes and :meth:`load_state_dict` reads.
        """
        regions = self.regions
        surrogate = (
            self.surrogate.state_dict()
            if isinstance(self.surrogate, IncrementalGP)
            else None
        )
        pending = list(self._pending.items())
        return {
            "config": self.config(),
            "train_X": self.train_X.clone(),
            "train_Y": self.train_Y.clone(),
            "told_X": self.told_X.clone(),
            "told_Y": self.told_Y.clone(),
            "pending_ids": torch.tensor([i for i, _ in pending], dtype=torch.long),
            "pending_X": torch.stack([p[0] for _, p in pending])
            if pending
            else self._unit.new_zeros(0, self.dim),
            "pending_raw": self.pending.clone(),
            "pending_owner": torch.tensor([p[2] for _, p in pending], dtype=torch.long),
            "next_id": self._next_id,
            "design_asked": self._design_asked,
            "new_X": self._new_X.clone(),
            "new_Y": self._new_Y.clone(),
            "new_owner": self._new_owner.clone(),
            "new_told": self._new_told,
            "torch_state": self._torch_state.clone(),
            "generator_state": self.generator.get_state(),
            "engine": _engine_state(self.engine),
            "extra_engine": _engine_state(self._extra),
            "regions": {
                "states": [dataclasses.asdict(s) for s in regions.states],
                "centres": [c.clone() for c in regions.centres],
                "centre_values": list(regions.centre_values),
                "collapsed": [c.clone() for c in regions.collapsed],
                "restarts": regions.restarts,
            },
            "surrogate": surrogate,
            "asks": self.asks,
            "log": torch.tensor(self.log, dtype=torch.double).reshape(
                -1, len(LOG_COLUMNS)
            ),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        r"""Continue from :meth:`state_dict`'s state.

        The settings must match this object's (:meth:`config`); points pending
        at the save come first out of the next :meth:`ask`.

        Args:
            state: A state dict (see :func:`~botorch_sketch.bo.checkpoint.load`).
        """
        saved = state.get("config")
        if isinstance(saved, dict) and "success" not in saved:
            # Checkpoints from before the choice read means.
            saved = {**saved, "success": "mean"}
        if isinstance(saved, dict) and "region_share" not in saved:
            # Checkpoints from before the reservation let paths go anywhere.
            saved = {**saved, "region_share": 0.0}
        if isinstance(saved, dict) and "num_features" not in saved:
            saved = {**saved, "num_features": 1024}
        checkpoint.check_config(saved, self.config())
        try:
            self._load(state)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
            raise checkpoint.CheckpointError(
                f"The checkpoint's optimizer state is incomplete or malformed "
                f"({type(e).__name__}: {e})."
            ) from e

    def _check_fields(self, state: dict[str, Any]) -> None:
        # Fields that loaded and failed later, or were refused by a message
        # that did not name them: each refused here, by name.
        def refuse(name: str, problem: str) -> None:
            raise checkpoint.CheckpointError(
                f"The checkpoint's {name} {problem}; the file is damaged or was edited."
            )

        n = state["train_X"].shape[0]
        train_Y = state["train_Y"]
        if not isinstance(train_Y, Tensor) or tuple(train_Y.shape) != (n, 1):
            found = tuple(train_Y.shape) if isinstance(train_Y, Tensor) else train_Y
            refuse("train_Y", f"is {found!r}, not a {n} x 1 tensor (train_X's rows)")
        if not bool(torch.isfinite(train_Y).all()):
            refuse("train_Y", "holds NaN or infinite values")
        for name, expected in (
            ("torch_state", torch.get_rng_state()),
            ("generator_state", self.generator.get_state()),
        ):
            value = state[name]
            if (
                not isinstance(value, Tensor)
                or value.dtype != expected.dtype
                or value.shape != expected.shape
            ):
                found = tuple(value.shape) if isinstance(value, Tensor) else value
                refuse(
                    name,
                    f"is {found!r}, not a random state ({expected.numel()} bytes)",
                )
        log = state["log"]
        if not isinstance(log, Tensor) or log.dim() != 2:
            refuse("log", "is not a 2-d tensor (one row per ask)")
        if log.shape[-1] != len(LOG_COLUMNS):
            refuse("log", f"has {log.shape[-1]} columns, not {len(LOG_COLUMNS)}")
        asked = state["design_asked"]
        if (
            isinstance(asked, bool)
            or not isinstance(asked, int)
            or not 0 <= asked <= self.num_initial
        ):
            refuse(
                "design_asked",
                f"is {asked!r}, not a count of the design's {self.num_initial} points",
            )
        for i, s in enumerate(state["regions"]["states"]):
            try:
                TurboState(**s)
            except (InputDataError, TypeError) as e:
                refuse(f"trust region {i}", f"is invalid ({e})")

    def _load(self, state: dict[str, Any]) -> None:
        d = self.dim
        for name in ("train_X", "told_X", "pending_X", "pending_raw", "new_X"):
            t = state[name]
            if not isinstance(t, Tensor) or t.dim() != 2 or t.shape[-1] != d:
                raise checkpoint.CheckpointError(
                    f"The checkpoint's {name} is not a n x {d} tensor."
                )
        _check_observations(state)
        self._check_fields(state)
        self.train_X, self.train_Y = state["train_X"], state["train_Y"]
        self.told_X, self.told_Y = state["told_X"], state["told_Y"]
        self._pending, self._by_key = {}, {}
        rows = zip(
            state["pending_ids"].tolist(),
            state["pending_X"],
            state["pending_raw"],
            state["pending_owner"].tolist(),
            strict=True,
        )
        for i, x, r, k in rows:
            self._pending[i] = (x, r, k)
            self._by_key[_key(r)] = i
        self._reissue = list(self._pending)
        self._next_id = int(state["next_id"])
        self._design_asked = int(state["design_asked"])
        self._new_X, self._new_owner = state["new_X"], state["new_owner"]
        # The new points are the last told (checkpoints from before new_Y).
        new_Y = state.get("new_Y")
        k = self._new_X.shape[0]
        self._new_Y = (
            self.train_Y[self.train_Y.shape[0] - k :] if new_Y is None else new_Y
        )
        # Checkpoints from before the count read their new points as a batch.
        self._new_told = int(state.get("new_told", self.q))
        self._torch_state = state["torch_state"]
        self.generator.set_state(state["generator_state"])
        _set_engine(self.engine, state["engine"])
        _set_engine(self._extra, state["extra_engine"])
        regions = state["regions"]
        self.regions.states = [TurboState(**s) for s in regions["states"]]
        self.regions.centres = list(regions["centres"])
        self.regions.centre_values = list(
            regions.get("centre_values", [math.inf] * len(self.regions.centres))
        )
        self.regions.collapsed = list(regions["collapsed"])
        self.regions.restarts = int(regions["restarts"])
        self.asks = int(state["asks"])
        self.log = state["log"].tolist()
        raw_told = unnormalize(self.told_X, self.bounds)
        self._told_keys = {_key(x) for x in raw_told}
        self._seen = {_key(x) for x in self.told_X}
        self._seen.update(_key(x) for x in state["pending_X"])
        if self._design_asked > 0:
            self._seen.update(_key(x) for x in self._design[: self._design_asked])
        if isinstance(self.surrogate, IncrementalGP):
            if state["surrogate"] is None:
                raise checkpoint.CheckpointError(
                    "The checkpoint holds no IncrementalGP state."
                )
            self.surrogate.load_state_dict(
                state["surrogate"], self.train_X, self.train_Y
            )

    def save(self, path: str | Path) -> None:
        r"""Write the state to ``path`` atomically (see :mod:`.checkpoint`).

        Args:
            path: The checkpoint's file.
        """
        checkpoint.save_checkpoint(self.state_dict(), path)

    @classmethod
    def load(
        cls, path: str | Path, bounds: Tensor, **kwargs: Any
    ) -> LargeBatchOptimizer:
        r"""An optimizer configured as given and resumed from ``path``.

        Args:
            path: A file written by :meth:`save`.
            bounds: The search box, as in the saved run.
            kwargs: The saved run's other settings (and its surrogate).

        Returns:
            The optimizer, ready to ask.
        """
        optimizer = cls(bounds, **kwargs)
        optimizer.load_state_dict(checkpoint.load_checkpoint(path))
        return optimizer


def _check_observations(state: dict[str, Any]) -> None:
    # Points outside the unit cube (``best`` returned a point outside the
    # bounds) and told points without their results, refused by name.
    for name in ("train_X", "told_X", "pending_X", "new_X"):
        t = state[name]
        outside = ~((t >= -_UNIT_SLACK) & (t <= 1 + _UNIT_SLACK)).all(-1)  # NaN too
        if bool(outside.any()):
            row = int(outside.nonzero()[0])
            raise checkpoint.CheckpointError(
                f"The checkpoint's {name} has row {row} ({t[row].tolist()}) "
                "outside the unit cube (its points are the bounds mapped to "
                "[0, 1]); the file is damaged or was edited."
            )
    n = state["told_X"].shape[0]
    told_Y = state["told_Y"]
    if not isinstance(told_Y, Tensor) or tuple(told_Y.shape) != (n, 1):
        found = tuple(told_Y.shape) if isinstance(told_Y, Tensor) else told_Y
        raise checkpoint.CheckpointError(
            f"The checkpoint's told_Y is {found!r}, not a {n} x 1 tensor (one "
            "result per row of told_X); the file is damaged or was edited."
        )


def _engine_state(engine: SobolEngine) -> dict[str, Any]:
    return {
        "seed": -1 if engine.seed is None else int(engine.seed),
        "num_generated": int(engine.num_generated),
        "quasi": engine.quasi.clone(),
    }


def _set_engine(engine: SobolEngine, state: dict[str, Any]) -> None:
    if int(state["seed"]) != (-1 if engine.seed is None else int(engine.seed)):
        raise checkpoint.CheckpointError("The checkpoint's Sobol seed differs.")
    quasi = state["quasi"]
    if not isinstance(quasi, Tensor) or quasi.shape != engine.quasi.shape:
        raise checkpoint.CheckpointError("The checkpoint's Sobol state is malformed.")
    engine.quasi = quasi.clone()
    engine.num_generated = int(state["num_generated"])
