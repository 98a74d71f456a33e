#!/usr/bin/env python3
r"""Several TuRBO trust regions over one carried global model.

TuRBO-m [Eriksson2019scalable]_ runs ``m`` trust regions, each with its own
local GP, and lets Thompson sampling share the batch among them: every path
takes its maximum over the union of the regions' candidates, so a region that
looks better gets more points. Here every region reads the same global model
(which keeps every observation), so a region costs only its candidates. That
global model is also why part of each batch is reserved to the regions in
equal shares (``region_share`` of
:class:`~botorch_sketch.bo.ask_tell.LargeBatchOptimizer`, half by default:
those paths take their maximum over one region's candidates alone). TuRBO-m's
local GP learns a region from that region's own data; a capped global model
places its inducing points where the data are, so a region the paths never
choose stays a region the model reads poorly. On Hartmann-6 the second region
sat 0.16 from the optimum, at a true value of 2.88 and a posterior mean of
1.4, for 3000 evaluations without a single point, while every path peaked in
the first region's basin at 3.2 (seed 0, without the reservation).

The regions themselves:

- a region's centre is its incumbent, the point of largest score among its
  centre and the points it was given, and a batch succeeds when its best score
  beats the centre's. The score (``success``) is the posterior mean
  (``"mean"``: re-read each batch under the current model; with noise, the
  best observation of a batch is mostly its luckiest draw), the observation
  (``"observation"``: TuRBO's rule), or the smaller of the two
  (``"pessimistic"``). Means alone over-credit new points next to good ones
  where the model smooths (a 100-D model whose lengthscales exceed the box):
  the region keeps succeeding on means while the observations stall, and never
  shrinks; observations alone are fooled by a lucky draw in noise. The smaller
  of the two needs both to agree;
- its box follows the model's lengthscales (:func:`trust_region_bounds`) and
  its candidates move a random subset of coordinates
  (:func:`perturbed_candidates`);
- a collapsed region restarts at once with TuRBO's initial length: the first
  region at the best of the regions' centres (a collapse in noise or on a
  rugged function is not the end of the best basin), the others where one
  global Thompson sample peaks among points outside every collapsed region's
  initial box (a restart at the best posterior mean would climb the hill it
  just left, and a second basin is found only by leaving the first); the data
  are kept. Measured on Ackley-20, rover-60 and Hartmann-6 (6000 evaluations,
  seed 0 or 1), two regions of these kinds beat one region of either.

References:

.. [Eriksson2019scalable]
    D. Eriksson, M. Pearce, J. Gardner, R. D. Turner, M. Poloczek. Scalable
    global optimization via local Bayesian optimization. NeurIPS 2019.
"""

from __future__ import annotations

import dataclasses
import math

import torch
from botorch.exceptions.errors import InputDataError
from botorch.models.model import Model
from botorch.sampling.pathwise import draw_matheron_paths
from torch import Tensor
from torch.quasirandom import SobolEngine

from botorch_sketch.bo.sampling import path_values, posterior_means
from botorch_sketch.bo.trust_region import (
    TurboState,
    lengthscale_weights,
    perturbed_candidates,
    restart_state,
    trust_region_bounds,
    update_state,
)
from botorch_sketch.checks import checked_count

#: How a region scores its points (see the module's docstring).
SUCCESS_RULES = ("mean", "observation", "pessimistic")


class TrustRegions:
    r"""``num_regions`` TuRBO regions sharing one model and one batch."""

    def __init__(
        self,
        dim: int,
        batch_size: int,
        num_regions: int = 1,
        engine: SobolEngine | None = None,
        generator: torch.Generator | None = None,
        success: str = "pessimistic",
    ) -> None:
        r"""Configure the regions; their centres are set by :meth:`start`.

        Args:
            dim: The input dimension ``d`` (inputs in the unit cube).
            batch_size: Points per batch ``q`` (TuRBO's failure tolerance).
            num_regions: How many regions share the batch.
            engine: The scrambled Sobol sequence of every candidate set
                (default: one seeded from ``generator``).
            generator: Seeds the candidates' coordinate masks (and the
                default engine). The Thompson paths of restarts draw from
                torch's global generator, as BoTorch's paths do.
            success: How a region scores its points, one of
                :data:`SUCCESS_RULES`: ``"mean"`` (posterior means),
                ``"observation"`` (TuRBO's) or ``"pessimistic"`` (the smaller
                of the two).
        """
        if success not in SUCCESS_RULES:
            raise InputDataError(
                f"success must be one of {SUCCESS_RULES}, got {success!r}."
            )
        self.success = success
        self.dim = checked_count(dim, "dim")
        self.num_regions = checked_count(num_regions, "num_regions")
        state = TurboState(dim=self.dim, batch_size=batch_size)
        self.states = [state] * self.num_regions
        self.centres: list[Tensor] = []
        # The observation at each centre (+inf where none is known: a restart
        # at an unobserved peak; the mean then stands in).
        self.centre_values: list[float] = []
        self.collapsed: list[Tensor] = []
        self.restarts = 0
        if engine is None:
            seed = int(torch.randint(2**31 - 1, (1,), generator=generator))
            engine = SobolEngine(self.dim, scramble=True, seed=seed)
        self.engine = engine
        self.generator = generator

    @property
    def lengths(self) -> list[float]:
        r"""The regions' lengths."""
        return [state.length for state in self.states]

    def start(self, model: Model, X: Tensor, num_candidates: int) -> None:
        r"""Centre the first region at the best posterior mean, the others apart.

        Args:
            model: The fitted model of ``X``.
            X: A ``n x d`` tensor of the observed inputs.
            num_candidates: The global candidates the other centres are
                chosen among.
        """
        means = posterior_means(model, X)
        self.centres = [X[means.argmax()]]
        self.centre_values = [math.inf] * self.num_regions
        for _ in range(1, self.num_regions):
            self.centres.append(
                self._global_peak(model, num_candidates, self.centres, self.states[0])
            )

    def candidates(self, model: Model, num_candidates: int) -> tuple[Tensor, Tensor]:
        r"""Every region's candidates, and each candidate's box.

        Args:
            model: The fitted model (its lengthscales shape the boxes).
            num_candidates: Candidates in all, shared equally.

        Returns:
            A ``N x d`` tensor of candidates and a ``2 x N x d`` tensor of
            their regions' boxes.
        """
        per = max(1, num_candidates // self.num_regions)
        points, boxes = [], []
        for state, centre in zip(self.states, self.centres, strict=True):
            box = trust_region_bounds(state, model, centre)
            seed = int(torch.randint(2**31 - 1, (1,), generator=self.generator))
            points.append(
                perturbed_candidates(centre, box, per, seed=seed, engine=self.engine)
            )
            boxes.append(box.unsqueeze(1).expand(2, per, self.dim))
        return torch.cat(points), torch.cat(boxes, dim=1)

    def update(
        self,
        model: Model,
        new_X: Tensor,
        owner: Tensor,
        num_candidates: int,
        tolerance: float = 0.0,
        new_Y: Tensor | None = None,
    ) -> None:
        r"""Score each region's new points under the updated model; restart.

        Args:
            model: The model of every observation, the new ones included.
            new_X: A ``b x d`` tensor of the batch's finite points.
            owner: A ``b`` long tensor: the region each point came from.
            num_candidates: The global candidates a restart chooses among.
            tolerance: With ``"mean"`` or ``"pessimistic"`` scores, a batch
                succeeds when its best score beats the centre's by more than
                this (and TuRBO's ``1e-3 |best|``): means of new points next
                to the centre differ from its own by a little almost always,
                and a region that counted those as successes never shrank.
            new_Y: A ``b`` or ``b x 1`` tensor of the points' observations
                (needed unless ``success="mean"``).
        """
        if self.success != "mean":
            if new_Y is None or new_Y.numel() != new_X.shape[0]:
                raise InputDataError(
                    f"success={self.success!r} needs new_Y, one observation per "
                    f"point of new_X ({new_X.shape[0]})."
                )
            new_Y = new_Y.reshape(-1)
        for k in range(self.num_regions):
            mine = new_X[owner == k]
            if mine.shape[0] == 0:
                continue
            means = posterior_means(model, torch.cat([self.centres[k][None], mine]))
            scores, extra = means, tolerance
            if self.success != "mean":
                seen = torch.cat(
                    [means.new_tensor([self.centre_values[k]]), new_Y[owner == k]]
                ).to(means)
                if self.success == "observation":
                    # An unobserved centre (a restart) is read by its mean.
                    if not math.isfinite(self.centre_values[k]):
                        seen[0] = means[0]
                    scores, extra = seen, 0.0
                else:
                    scores = torch.minimum(means, seen)
            state = dataclasses.replace(
                self.states[k], best_value=float(scores[0]) + extra
            )
            self.states[k] = update_state(state, scores[1:].unsqueeze(-1))
            best = int(scores.argmax())  # the centre moves to any better score
            if best > 0:
                self.centres[k] = mine[best - 1]
                if self.success != "mean":
                    self.centre_values[k] = float(new_Y[owner == k][best - 1])
            if self.states[k].restart_triggered:
                self.states[k] = restart_state(self.states[k])
                self.restarts += 1
                if k == 0:
                    # The first region re-expands at the best centre: a
                    # collapse in noise or ruggedness is not the end of the
                    # best basin (Ackley's).
                    means = posterior_means(model, torch.stack(self.centres))
                    j = int(means.argmax())
                    self.centres[0] = self.centres[j]
                    self.centre_values[0] = self.centre_values[j]
                    continue
                # The others restart away from where regions collapsed (a
                # second basin, Hartmann's, is found only by leaving the first).
                self.collapsed.append(self.centres[k])
                avoid = self.collapsed + self.centres[:k] + self.centres[k + 1 :]
                self.centres[k] = self._global_peak(
                    model, num_candidates, avoid, self.states[k]
                )
                self.centre_values[k] = math.inf

    def _global_peak(
        self, model: Model, num_candidates: int, avoid: list[Tensor], state: TurboState
    ) -> Tensor:
        # One Thompson path's argmax over global candidates outside the
        # initial boxes around ``avoid`` (all of them if none is outside).
        candidates = self.engine.draw(num_candidates, dtype=torch.double)
        candidates = candidates.to(self.centres[0] if self.centres else candidates)
        half = 0.5 * state.length * lengthscale_weights(model, self.dim)
        half = half.to(candidates)
        inside = torch.zeros(candidates.shape[0], dtype=torch.bool)
        for centre in avoid:
            inside |= ((candidates - centre).abs() <= half).all(-1).cpu()
        if not bool(inside.all()):
            candidates = candidates[~inside.to(candidates.device)]
        paths = draw_matheron_paths(model, sample_shape=torch.Size([1]))
        with torch.no_grad():
            values = path_values(paths, candidates)[0]
        return candidates[values.argmax()]
