#!/usr/bin/env python3
r"""``NystromGP.fantasize``: Woodbury steps against refactorising every fantasy.

What ``qKnowledgeGradient`` asks of a model at each optimiser step:
``fantasize`` at ``b`` candidate sets of ``q`` points with ``f`` fantasised
outcomes each, then the posterior of the ``f x b`` fantasy models at ``b``
test sets. ``NystromGP`` absorbs the fantasies by the Woodbury step of
:class:`~botorch_sketch.sketching.online.tracked.WeightPosterior`, keeping one ``m x m``
matrix and a ``b x q x m`` downdate shared by the fantasies. The baseline is
the route a DTC model takes without it (and this package took before): add the
fantasies' statistics and factorise ``B = I + Z^T Lambda^{-1} Z`` for each of
the ``f x b`` models. Both give the same posterior (checked here, to 1e-8).
Each route runs in a fresh process, whose peak memory above the fitted model's
is reported (a lower bound: where the route needs less than building the model
did, it reads 0).
"""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass

import torch
from botorch.sampling import SobolQMCNormalSampler

from benchmarks.metrics import in_fresh_process
from botorch_sketch.models.nystrom_gp import NystromGP
from botorch_sketch.sketching.posterior import DTCStatistics, WeightPosterior
from botorch_sketch.sketching.rules import GreedyVarianceSelector

#: ``(n, m, b, f)`` per budget: data, inducing points, candidate sets, fantasies.
BUDGETS = {
    "small": [(5_000, 128, 10, 32)],
    "large": [(20_000, 256, 20, 64), (20_000, 512, 20, 64)],
}
Q = 1
DIM = 6


@dataclass
class Row:
    r"""One route at one size."""

    n: int
    m: int
    batch: int
    fantasies: int
    route: str
    seconds: float
    extra_mb: float
    max_error: float


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _refactorised_posterior(model: NystromGP, X, Y, Xt):
    # The baseline: statistics of the fantasies added, B factorised per fantasy.
    embedding, state = model.posterior_state()
    X_tf, Xt_tf = model.transform_inputs(X), model.transform_inputs(Xt)
    Y_tf, _ = model.outcome_transform(Y, None, X=X_tf)
    residual = Y_tf.squeeze(-1) - model.mean_module(X_tf)
    noise = model.likelihood.noise.expand(residual.shape)
    new = DTCStatistics.from_data(embedding, X_tf, residual, noise)
    posterior = WeightPosterior(state.statistics + new)
    Z = embedding(Xt_tf)
    covar = posterior.covariance(Z, model.covar_module(Xt_tf).to_dense())
    mean = model.mean_module(Xt_tf) + posterior.mean(Z)
    return model.outcome_transform.untransform(mean.unsqueeze(-1))[0], covar


def _case(n: int, m: int, b: int, f: int, route: str, queue) -> None:
    torch.manual_seed(0)
    X = torch.rand(n, DIM, dtype=torch.double)
    Y = torch.sin(5 * X).sum(-1, keepdim=True) + 0.1 * torch.randn(n, 1).double()
    model = NystromGP(X, Y, inducing=GreedyVarianceSelector(m)).eval()
    model.posterior(X[:2])  # the model's own state, before the clock
    Xf = torch.rand(b, Q, DIM, dtype=torch.double)
    Xt = torch.rand(b, 1, DIM, dtype=torch.double)
    sampler = SobolQMCNormalSampler(torch.Size([f]), seed=0)
    Yf = sampler(model.posterior(Xf, observation_noise=True))
    base = _peak_mb()
    with torch.no_grad():
        start = time.perf_counter()
        if route == "woodbury":
            post = model.condition_on_observations(Xf, Yf).posterior(Xt)
            mean, variance = post.mean, post.variance
        else:
            mean, covar = _refactorised_posterior(model, Xf, Yf, Xt)
            variance = covar.diagonal(dim1=-2, dim2=-1).unsqueeze(-1)
            variance = variance * model.outcome_transform.stdvs.pow(2)
        seconds = time.perf_counter() - start
    # Plain lists: tensors would travel by shared memory the child then frees.
    mean, variance = mean.reshape(-1), variance.expand_as(mean).reshape(-1)
    queue.put((seconds, _peak_mb() - base, mean.tolist(), variance.tolist()))


def run(budget_name: str = "small") -> list[Row]:
    r"""Both routes at every size of the budget, each in a fresh process."""
    rows = []
    for n, m, b, f in BUDGETS[budget_name]:
        results = {
            r: in_fresh_process(_case, n, m, b, f, r)
            for r in ("woodbury", "refactorise")
        }
        reference = results["refactorise"]
        as_tensor = lambda values: torch.tensor(values, dtype=torch.double)  # noqa: E731
        ref_mean, ref_var = as_tensor(reference[2]), as_tensor(reference[3])
        for route, (seconds, extra, mean, variance) in results.items():
            error = max(
                float((as_tensor(mean) - ref_mean).abs().max()),
                float((as_tensor(variance) - ref_var).abs().max()),
            )
            rows.append(Row(n, m, b, f, route, seconds, extra, error))
            print(f"n={n} m={m} {route}: {seconds:.3f} s, +{extra:.0f} MB")
    return rows


def render(rows: list[Row], machine: str) -> str:
    r"""Ratios first (refactorising over Woodbury), then the absolute figures."""
    lines = [
        "Fantasize at b candidate sets of q = 1 point with f outcomes each, then "
        "the f x b posteriors at b test points (what qKnowledgeGradient asks per "
        "step). Ratios: refactorising every fantasy over the Woodbury route "
        "(higher is better for the Woodbury route).",
        "",
        "| n | m | b | f | time ratio | memory ratio | max difference |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for a in rows:
        if a.route != "woodbury":
            continue
        ref = next(
            r
            for r in rows
            if r.route == "refactorise" and (r.n, r.m, r.batch) == (a.n, a.m, a.batch)
        )
        lines.append(
            f"| {a.n} | {a.m} | {a.batch} | {a.fantasies} | "
            f"{ref.seconds / a.seconds:.0f}x | "
            f"{ref.extra_mb / max(a.extra_mb, 1.0):.0f}x | {a.max_error:.1e} |"
        )
    lines += [
        "",
        "| n | m | b | f | route | seconds | peak MB above the model |",
        "|---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.n} | {r.m} | {r.batch} | {r.fantasies} | {r.route} | "
            f"{r.seconds:.3f} | {r.extra_mb:.0f} |"
        )
    lines += ["", f"Absolute figures are from {machine}."]
    return "\n".join(lines)
