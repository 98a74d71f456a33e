#!/usr/bin/env python3
r"""A real BO task: a scikit-learn estimator's cross-validated accuracy.

The same estimators, search spaces and cross-validation as ``botorch-sketch tune``
(:mod:`botorch_sketch.integrations.tune.problems`), as a BoTorch test function,
so that the closed-loop benchmark runs a real objective through the same loop as
the synthetic ones. Log-scaled hyperparameters are searched in ``log10`` units and
integers are rounded. The accuracy is maximised; its optimal value is taken to
be 1, so the "simple regret" the benchmark reports is the best cross-validated
error found (it cannot reach zero on most data sets, and it is the same floor
for every method).

The folds are fixed, so the objective is deterministic; values are memoised per
point, as the loop evaluates its initial design twice (with and without noise).
"""

from __future__ import annotations

import math

import torch
from botorch.exceptions.errors import InputDataError
from botorch.test_functions.synthetic import SyntheticTestFunction
from torch import Tensor

from botorch_sketch.tune.problems import DATASETS, ESTIMATORS, evaluate


class CrossValidatedAccuracy(SyntheticTestFunction):
    r"""Cross-validated accuracy of a scikit-learn estimator (to be maximised).

    Example:
        >>> problem = CrossValidatedAccuracy("breast_cancer", "svm")
        >>> problem(problem.bounds.mean(0, keepdim=True))  # one accuracy
    """

    _optimal_value = 1.0
    _optimizers = None

    def __init__(
        self, dataset: str = "breast_cancer", estimator: str = "svm", folds: int = 3
    ) -> None:
        r"""Build the problem.

        Args:
            dataset: A data set of
                :data:`~botorch_sketch.integrations.tune.problems.DATASETS`.
            estimator: An estimator of
                :data:`~botorch_sketch.integrations.tune.problems.ESTIMATORS`.
            folds: Stratified cross-validation folds (split with seed 0).
        """
        if dataset not in DATASETS or estimator not in ESTIMATORS:
            raise InputDataError(
                f"Unknown dataset {dataset!r} or estimator {estimator!r}; choose "
                f"from {sorted(DATASETS)} and {sorted(ESTIMATORS)}."
            )
        self.dataset, self.estimator, self.folds = dataset, estimator, folds
        self.params = ESTIMATORS[estimator].params
        self.dim = len(self.params)
        self.continuous_inds = list(range(self.dim))
        bounds = [
            (math.log10(p.low), math.log10(p.high)) if p.log else (p.low, p.high)
            for p in self.params
        ]
        super().__init__(bounds=bounds)
        self._memo: dict[tuple[float, ...], float] = {}

    def parameters(self, x: Tensor) -> dict[str, float | int]:
        r"""The estimator's hyperparameters at one point ``x`` (``d``)."""
        values: dict[str, float | int] = {}
        for p, v in zip(self.params, x.tolist(), strict=True):
            value = 10.0**v if p.log else v
            value = min(max(value, p.low), p.high)
            values[p.name] = round(value) if p.kind == "int" else value
        return values

    def _evaluate_true(self, X: Tensor) -> Tensor:
        r"""Accuracies of ``batch_shape x d`` points (one cross-validation each)."""
        rows = X.reshape(-1, self.dim)
        out = []
        # One estimator fit per point: the loop is over model fits, not arithmetic.
        for x in rows:
            key = tuple(x.tolist())
            if key not in self._memo:
                score, _ = evaluate(
                    self.dataset, self.estimator, self.parameters(x), self.folds
                )
                self._memo[key] = score
            out.append(self._memo[key])
        return torch.tensor(out, dtype=X.dtype, device=X.device).reshape(X.shape[:-1])
