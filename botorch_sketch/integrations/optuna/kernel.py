#!/usr/bin/env python3
r"""The kernel of the sampler's models: ``GPSampler``'s prior on a GPyTorch kernel.

BoTorch's default (``SingleTaskGP``'s, and ``NystromGP``'s) is an RBF kernel
with a dimension-scaled log-normal lengthscale prior (median about 10 in six
dimensions, on the unit cube), which lets a weakly informative dimension's
lengthscale run long. On DTLZ2 (six parameters, two objectives) the models
then learned that five of them hardly mattered and were confidently wrong
where they did: 60-trial studies (with the sampler's analytic log EHVI)
reached a median hypervolume of 0.195 over 6 seeds against ``GPSampler``'s
0.310. ``GPSampler`` keeps every lengthscale near
the unit cube's scale: a Matern-5/2 kernel with ARD, a prior on each inverse
squared lengthscale ``r = 1 / l^2`` of log density ``-(0.1 / r + 0.1 r)``, and
a ``Gamma(2, 1)`` prior on the kernel's scale. :func:`_gpsampler_kernel`
builds that kernel from GPyTorch's parts (the lengthscale prior, which GPyTorch
lacks, is :class:`_InverseSquaredLengthscalePrior`); with it the sampler
reached 0.313 on DTLZ2, and tied ``GPSampler`` on the benchmark's own
two-objective task (median 4.323 against 4.322 over 6 seeds). The model of
where trials fail keeps BoTorch's kernel (see ``_SamplerOptions``).

``GPSampler`` has one lengthscale per parameter: a categorical parameter is
one column of indices, compared by Hamming distance. The sampler encodes it
as one-hot columns (Optuna's encoding, which ``BoTorchSampler`` shares); with
one lengthscale per column, six categoricals of 3 to 10 choices made 36 of 48
lengthscales, each penalised by the prior, and the fits ended in worse optima
(the ``categories`` task of ``suggest --budget mixed-unseen``: a loss of 0.220
per trial against -0.195 with the columns sharing one lengthscale per
parameter, in 76 iterations against 106). :class:`_ParameterMaternKernel`
shares them: two points that differ in a categorical parameter are
``sqrt(2) / l`` apart in it, whichever their choices, as under Hamming
distance (up to the factor).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from gpytorch.kernels import Kernel, MaternKernel, ScaleKernel
from gpytorch.priors import GammaPrior, Prior
from torch import Tensor
from torch.distributions import constraints


class _InverseSquaredLengthscalePrior(Prior):
    r"""``GPSampler``'s lengthscale prior: ``log p(l) = -0.1 (l^2 + l^-2) + c``.

    As ``GPSampler`` writes it on ``r = 1 / l^2``, ``-(0.1 / r + 0.1 r)``, a
    penalty for fitting (maximum a posteriori), not a normalised density:
    both very long and very short lengthscales are penalised, most lightly
    at ``l = 1``.
    """

    arg_constraints: dict = {}
    support = constraints.positive

    def __init__(self) -> None:
        super().__init__(validate_args=False)

    def log_prob(self, lengthscale: Tensor) -> Tensor:  # noqa: D102
        return -0.1 * (lengthscale.pow(2) + lengthscale.pow(-2))


class _ParameterMaternKernel(MaternKernel):
    r"""A Matern ARD kernel with one lengthscale per parameter, not per column.

    The encoded columns of a parameter (a categorical parameter's one-hot
    columns) share its lengthscale: ``lengthscale`` is the ``... x 1 x D``
    lengthscale of each column, read from the ``... x 1 x P`` parameters'
    (``raw_lengthscale``, and what the lengthscale prior sees: each
    parameter's once).

    Example:
        >>> # Columns 0 and 4 are floats, 1-3 a categorical of three choices.
        >>> kernel = _ParameterMaternKernel(torch.tensor([0, 1, 1, 1, 2]), nu=2.5)
        >>> kernel.raw_lengthscale.shape, kernel.lengthscale.shape
        (torch.Size([1, 3]), torch.Size([1, 5]))
    """

    def __init__(self, column_parameters: Tensor, **kwargs: object) -> None:
        r"""Share lengthscales by parameter.

        Args:
            column_parameters: A ``D`` long tensor: the parameter (``0`` to
                ``P - 1``, each at least once) of each encoded column.
            kwargs: As for ``MaternKernel``, but ``ard_num_dims`` (``P``).
        """
        super().__init__(ard_num_dims=int(column_parameters.max()) + 1, **kwargs)
        self.register_buffer("column_parameters", column_parameters.long())
        # The inputs' width, which GPyTorch checks inputs against (the
        # lengthscale above was laid out with one per parameter).
        self.ard_num_dims = len(column_parameters)

    @property
    def lengthscale(self) -> Tensor:
        r"""The ``... x 1 x D`` lengthscales of the columns."""
        return self._parameter_lengthscale(self)[..., self.column_parameters]

    @lengthscale.setter
    def lengthscale(self, value: Tensor) -> None:
        # The parameters' ``... x 1 x P`` lengthscales.
        self._set_lengthscale(value)

    @staticmethod
    def _parameter_lengthscale(m: Kernel) -> Tensor:
        return m.raw_lengthscale_constraint.transform(m.raw_lengthscale)

    def _lengthscale_param(self, m: Kernel) -> Tensor:
        # The prior sees each parameter's lengthscale once.
        return self._parameter_lengthscale(m)


def _gpsampler_kernel(
    dim: int, columns: Sequence[np.ndarray | Sequence[int]] | None = None
) -> Kernel:
    r"""A scaled Matern-5/2 ARD kernel of ``dim`` inputs, ``GPSampler``'s priors.

    Args:
        dim: The number of encoded columns.
        columns: Each parameter's encoded columns (``_Encoding.columns``), or
            None. Where a parameter has several (a categorical one), they
            share its lengthscale (:class:`_ParameterMaternKernel`).
    """
    prior = _InverseSquaredLengthscalePrior()
    if columns is not None and any(len(c) > 1 for c in columns):
        owner = torch.full((dim,), -1, dtype=torch.long)
        for parameter, c in enumerate(columns):
            owner[torch.as_tensor(np.asarray(c), dtype=torch.long)] = parameter
        if bool((owner < 0).any()):
            raise ValueError(f"columns {columns} do not cover the {dim} columns.")
        base = _ParameterMaternKernel(owner, nu=2.5, lengthscale_prior=prior)
    else:
        base = MaternKernel(nu=2.5, ard_num_dims=dim, lengthscale_prior=prior)
    return ScaleKernel(base, outputscale_prior=GammaPrior(2.0, 1.0))
