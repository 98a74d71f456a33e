#!/usr/bin/env python3
r"""BKB's confidence width ``beta_t`` from the state of a sketched posterior.

UCB in the papers' scale is ``mu(x) + beta_t * sigma_tilde(x)`` with
``sigma_tilde^2 = var / lambda`` (``var`` the DTC posterior variance in GP units,
``lambda`` the regulariser, the GP noise variance). ``beta_t`` grows with the
data-adaptive estimate ``sum_s sigma_tilde_t^2(x_s)`` of the effective dimension,
summed over all ``t`` observations (repeats included) with the *current*
variances.

Two forms:

- ``"theory"``: Theorem 2 of [Calandriello2019bkb]_ in the form whose
  derivation holds for every ``t`` (the printed ``2 log(kappa^2 t)`` bound on
  ``1 + log(kappa^2 t + 1)`` needs ``kappa^2 t >= 3.5``):
  ``xi sqrt(2 [alpha (1 + log(kappa^2 t + 1)) S + log(1/delta)])
  + (1 + (1 - eps)^{-1/2}) sqrt(lambda) F``, ``alpha = (1 + eps) / (1 - eps)``.
  With ``eps = 0`` (every observation in the dictionary) this is the exact
  GP-UCB width of the same derivation.
- ``"authors"``: the authors' public code,
  ``sqrt(lambda) F + sqrt(xi^2 (log(t) S + log(1/delta)))``.

References:

.. [Calandriello2019bkb]
    D. Calandriello, L. Carratino, A. Lazaric, M. Valko, L. Rosasco. Gaussian
    process optimization with adaptive sketching: scalable and no regret. COLT
    2019.
"""

from __future__ import annotations

import math
from typing import Literal

from botorch.exceptions.errors import InputDataError

WidthForm = Literal["theory", "authors"]


def bkb_width(
    variance_sum: float,
    num_observations: int,
    noise_std: float,
    noise_var: float,
    rkhs_norm: float = 1.0,
    delta: float = 0.5,
    kappa2: float = 1.0,
    epsilon: float = 0.5,
    form: WidthForm = "theory",
) -> float:
    r"""The confidence width ``beta_t``, in units of ``sigma_tilde``.

    Args:
        variance_sum: ``S = sum_s sigma_tilde_t^2(x_s)`` over all observations,
            in the ``1 / lambda`` scale.
        num_observations: ``t``.
        noise_std: ``xi``, the sub-Gaussian constant of the reward noise.
        noise_var: ``lambda``, the regulariser (the GP noise variance).
        rkhs_norm: ``F``, a bound on the RKHS norm of the reward function.
        delta: The failure probability.
        kappa2: ``max_x k(x, x)``.
        epsilon: The accuracy ``eps`` in ``[0, 1)`` of the dictionary (Theorem 1);
            ``0`` for an exact posterior.
        form: ``"theory"`` or ``"authors"`` (see the module docstring).

    Returns:
        ``beta_t``.

    Raises:
        InputDataError: for ``epsilon``, ``delta``, ``rkhs_norm`` or ``form`` out of
            range.
    """
    if not 0 <= epsilon < 1:
        raise InputDataError(f"epsilon must lie in [0, 1), got {epsilon}.")
    if not 0 < delta < 1:
        raise InputDataError(f"delta must lie in (0, 1), got {delta}.")
    # A negative bound on a norm silently narrowed the width.
    if not (math.isfinite(rkhs_norm) and rkhs_norm >= 0):
        raise InputDataError(
            f"rkhs_norm must be finite and non-negative, got {rkhs_norm}."
        )
    t = max(num_observations, 1)
    bias = math.sqrt(noise_var) * rkhs_norm
    if form == "authors":
        return bias + math.sqrt(
            noise_std**2 * (math.log(t) * variance_sum + math.log(1 / delta))
        )
    if form != "theory":
        raise InputDataError(f"form must be 'theory' or 'authors', got {form!r}.")
    alpha = (1 + epsilon) / (1 - epsilon)
    log_det = alpha * (1 + math.log(kappa2 * t + 1)) * variance_sum
    return (
        noise_std * math.sqrt(2 * (log_det + math.log(1 / delta)))
        + (1 + (1 - epsilon) ** -0.5) * bias
    )
