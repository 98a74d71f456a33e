#!/usr/bin/env python3
r"""The tuning problems: scikit-learn estimators on data sets that ship with it.

Each estimator has a search space defined here (log scale for scales such as a
regularisation strength or a learning rate) and is scored by stratified k-fold
cross-validated accuracy. :func:`evaluate` is what a worker process (or a Ray
task) runs for one trial; this module imports neither Ax nor Ray.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Literal

#: Data sets that ship with scikit-learn (no download): name -> loader name.
DATASETS: dict[str, str] = {
    "digits": "load_digits",
    "breast_cancer": "load_breast_cancer",
    "wine": "load_wine",
    "iris": "load_iris",
}


@dataclass(frozen=True)
class Param:
    r"""One hyperparameter: a range, integer or real, on a linear or log scale.

    Raises:
        ValueError: If the bounds are not finite with ``low < high``, if a log
            scale has ``low <= 0``, or an integer range has non-integer bounds.
    """

    name: str
    low: float
    high: float
    kind: Literal["float", "int"] = "float"
    log: bool = False

    def __post_init__(self) -> None:
        if self.kind not in ("float", "int"):
            raise ValueError(f"{self.name}: kind must be 'float' or 'int'.")
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            raise ValueError(f"{self.name}: bounds must be finite numbers.")
        if not self.low < self.high:
            raise ValueError(
                f"{self.name}: the lower bound {self.low:g} must be below the upper "
                f"bound {self.high:g}."
            )
        if not math.isfinite(self.high - self.low):
            # Sobol points are low + u (high - low): an overflowing width
            # handed the objective NaN parameters.
            raise ValueError(
                f"{self.name}: the range [{self.low:g}, {self.high:g}] is too wide "
                "to sample (high - low overflows); rescale the parameter."
            )
        if self.kind == "int" and max(abs(self.low), abs(self.high)) > 2**53:
            raise ValueError(
                f"{self.name}: integer bounds must lie within +-2^53 (exact as "
                f"floats), got [{self.low:g}, {self.high:g}]."
            )
        if self.log and self.low <= 0:
            raise ValueError(
                f"{self.name}: a log-scale range needs a positive lower bound, got "
                f"{self.low:g}."
            )
        if self.kind == "int" and (
            self.low != int(self.low) or self.high != int(self.high)
        ):
            raise ValueError(f"{self.name}: an integer range needs integer bounds.")

    def to_dict(self) -> dict[str, Any]:
        r"""A JSON description, stored with a run."""
        return {
            "name": self.name,
            "low": self.low,
            "high": self.high,
            "kind": self.kind,
            "log": self.log,
        }


def _svm(p: Mapping[str, Any]) -> Any:
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    return make_pipeline(StandardScaler(), SVC(C=p["C"], gamma=p["gamma"]))


def _logreg(p: Mapping[str, Any]) -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=p["C"], max_iter=500))


def _knn(p: Mapping[str, Any]) -> Any:
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(
        StandardScaler(),
        KNeighborsClassifier(n_neighbors=int(p["n_neighbors"]), p=p["minkowski_p"]),
    )


def _rf(p: Mapping[str, Any]) -> Any:
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier(
        n_estimators=int(p["n_estimators"]),
        max_depth=int(p["max_depth"]),
        min_samples_leaf=int(p["min_samples_leaf"]),
        max_features=p["max_features"],
        random_state=0,
        n_jobs=1,
    )


def _gbm(p: Mapping[str, Any]) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(
        learning_rate=p["learning_rate"],
        max_iter=int(p["max_iter"]),
        max_leaf_nodes=int(p["max_leaf_nodes"]),
        min_samples_leaf=int(p["min_samples_leaf"]),
        l2_regularization=p["l2_regularization"],
        # Tuned only by the tuning-peers benchmark's 6-parameter task.
        max_features=p.get("max_features", 1.0),
        early_stopping=False,
        random_state=0,
    )


def _mlp(p: Mapping[str, Any]) -> Any:
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(
        StandardScaler(),
        MLPClassifier(
            hidden_layer_sizes=(int(p["hidden_units"]),),
            alpha=p["alpha"],
            learning_rate_init=p["learning_rate_init"],
            max_iter=200,
            random_state=0,
        ),
    )


@dataclass(frozen=True)
class Estimator:
    r"""An estimator factory and its search space."""

    build: Callable[[Mapping[str, Any]], Any]
    params: tuple[Param, ...]
    description: str


#: The estimators ``--estimator`` names.
ESTIMATORS: dict[str, Estimator] = {
    "svm": Estimator(
        _svm,
        (Param("C", 1e-3, 1e3, log=True), Param("gamma", 1e-5, 1.0, log=True)),
        "RBF support vector classifier on standardised features",
    ),
    "logreg": Estimator(
        _logreg,
        (Param("C", 1e-4, 1e4, log=True),),
        "L2 logistic regression on standardised features",
    ),
    "knn": Estimator(
        _knn,
        (
            Param("n_neighbors", 1, 50, kind="int", log=True),
            Param("minkowski_p", 1.0, 3.0),
        ),
        "k nearest neighbours with a Minkowski metric",
    ),
    "rf": Estimator(
        _rf,
        (
            Param("n_estimators", 10, 300, kind="int", log=True),
            Param("max_depth", 2, 32, kind="int", log=True),
            Param("min_samples_leaf", 1, 20, kind="int", log=True),
            Param("max_features", 0.05, 1.0, log=True),
        ),
        "random forest",
    ),
    "gbm": Estimator(
        _gbm,
        (
            Param("learning_rate", 1e-3, 1.0, log=True),
            Param("max_iter", 10, 300, kind="int", log=True),
            Param("max_leaf_nodes", 4, 64, kind="int", log=True),
            Param("min_samples_leaf", 1, 50, kind="int", log=True),
            Param("l2_regularization", 1e-6, 10.0, log=True),
        ),
        "histogram gradient boosting",
    ),
    "mlp": Estimator(
        _mlp,
        (
            Param("hidden_units", 8, 256, kind="int", log=True),
            Param("alpha", 1e-6, 1.0, log=True),
            Param("learning_rate_init", 1e-4, 1e-1, log=True),
        ),
        "one-hidden-layer perceptron on standardised features",
    ),
}


def search_space(
    estimator: str, bounds: Mapping[str, tuple[float, float]] | None = None
) -> tuple[Param, ...]:
    r"""An estimator's search space, with some bounds replaced.

    Args:
        estimator: A key of :data:`ESTIMATORS`.
        bounds: New ``(low, high)`` bounds by parameter name.

    Returns:
        The parameters.

    Raises:
        ValueError: For an unknown estimator or parameter, or bad bounds.
    """
    if estimator not in ESTIMATORS:
        raise ValueError(
            f"unknown estimator {estimator!r}; choose from {sorted(ESTIMATORS)}."
        )
    params = ESTIMATORS[estimator].params
    names = [p.name for p in params]
    unknown = sorted(set(bounds or {}) - set(names))
    if unknown:
        raise ValueError(
            f"estimator {estimator!r} has no parameter {unknown[0]!r}; its "
            f"parameters are {names}."
        )
    return tuple(
        replace(p, low=bounds[p.name][0], high=bounds[p.name][1])
        if bounds and p.name in bounds
        else p
        for p in params
    )


@lru_cache(maxsize=4)
def load_dataset(name: str) -> tuple[Any, Any]:
    r"""The ``(X, y)`` arrays of a data set in :data:`DATASETS`."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; choose from {sorted(DATASETS)}.")
    import sklearn.datasets

    return getattr(sklearn.datasets, DATASETS[name])(return_X_y=True)


def evaluate(
    dataset: str,
    estimator: str,
    parameters: Mapping[str, Any],
    folds: int = 3,
    seed: int = 0,
    threads: int = 1,
) -> tuple[float, float]:
    r"""Cross-validated accuracy of one hyperparameter setting.

    Args:
        dataset: A key of :data:`DATASETS`.
        estimator: A key of :data:`ESTIMATORS`.
        parameters: The hyperparameters by name.
        folds: The number of stratified folds.
        seed: The seed of the fold split (the same for every trial).
        threads: Native threads (BLAS, OpenMP) the evaluation may use.

    Returns:
        The mean accuracy over the folds and the seconds it took.
    """
    start = time.perf_counter()
    model = ESTIMATORS[estimator].build(parameters)
    score, _ = cross_validated(dataset, model, folds, seed, threads)
    return score, time.perf_counter() - start


def cross_validated(
    dataset: str, model: Any, folds: int = 3, seed: int = 0, threads: int = 1
) -> tuple[float, float]:
    r"""Stratified k-fold cross-validated accuracy of a scikit-learn estimator.

    Args:
        dataset: A key of :data:`DATASETS`.
        model: An unfitted scikit-learn classifier.
        folds: The number of stratified folds.
        seed: The seed of the fold split.
        threads: Native threads (BLAS, OpenMP) the evaluation may use.

    Returns:
        The mean accuracy over the folds and the seconds it took.
    """
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from threadpoolctl import threadpool_limits

    start = time.perf_counter()
    X, y = load_dataset(dataset)
    split = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    with threadpool_limits(limits=threads), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        scores = cross_val_score(model, X, y, cv=split, n_jobs=1)
    return float(scores.mean()), time.perf_counter() - start
