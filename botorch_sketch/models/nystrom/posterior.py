#!/usr/bin/env python3
r"""A ``NystromGP``'s posterior, read from its state.

:func:`dtc_posterior` is what ``NystromGP.posterior`` returns at
(input-transformed) test points: the DTC predictive of the model's
:class:`~botorch_sketch.models.nystrom.state.NystromState`, with the noise
``observation_noise`` asks for (:func:`added_noise`) and the outcome transform
undone. Without observation noise the covariance is an operator whose rows are
formed on demand (acquisition functions with ``cache_root`` read only the ``q``
new rows of a joint covariance over baseline and new points), and a plain
``Standardize`` is undone on its pieces (:func:`standardize_scale`). Under
GPyTorch's ``skip_posterior_variances`` only the mean is read (the covariance
is zero, as an exact GP's is then): no covariance is folded.
:func:`dtc_marginals` reads the same means and variances at points taken one
at a time, with no posterior object around them (what ``q = 1`` analytic
acquisitions read, hundreds of times per maximisation).
:func:`latent_distribution` is the latent posterior ``model(x)`` gives in eval
mode, and :func:`absorbed` the Woodbury step behind
``condition_on_observations`` (with the noise of :func:`new_noise`).
"""

from __future__ import annotations

import torch
from botorch.exceptions.errors import UnsupportedError
from botorch.models.transforms.outcome import OutcomeTransform, Standardize
from botorch.posteriors.gpytorch import GPyTorchPosterior
from botorch.posteriors.transformed import TransformedPosterior
from gpytorch import settings as gpytorch_settings
from gpytorch.distributions import MultivariateNormal
from gpytorch.kernels import Kernel
from gpytorch.likelihoods import FixedNoiseGaussianLikelihood
from gpytorch.likelihoods.likelihood import Likelihood
from gpytorch.means import Mean
from linear_operator import to_linear_operator
from linear_operator.operators import DiagLinearOperator, ZeroLinearOperator
from torch import Tensor

from botorch_sketch.models.nystrom.state import NystromState
from botorch_sketch.models.validation import (
    check_new_observations,
    check_observation_noise,
    check_output_indices,
    check_test_inputs,
    floor_fixed_noise,
    one_input_points,
)
from botorch_sketch.sketching.embedding.kernels import kernel_diagonal
from botorch_sketch.sketching.posterior import DTCStatistics


def checked_output_and_points(
    model_name: str, X: Tensor, dim: int, output_indices: list[int] | None
) -> Tensor:
    r"""Check the output indices; a 1-d ``X`` of a 1-input model is ``q x 1``.

    The points' width is checked after the input transform, which may change
    it (see ``NystromGP._transformed_test_points``).

    Args:
        model_name: The class name, for messages.
        X: A ``batch_shape x q x d`` tensor (or, for ``d = 1``, a ``q`` tensor, as
            ``SingleTaskGP`` takes).
        dim: The input dimension ``d`` of the model's training inputs.
        output_indices: None or ``[0]`` (integers only: ``[0.0] == [0]`` and
            ``[False] == [0]`` were taken).

    Returns:
        The test points, ``batch_shape x q x d``.
    """
    if output_indices is not None and check_output_indices(output_indices, 1) != [0]:
        raise UnsupportedError(f"{model_name} has one output; got {output_indices=}.")
    return one_input_points(X, dim)


def check_new_data(X: Tensor, Y: Tensor, noise: Tensor | None, dim: int) -> None:
    r"""Check ``condition_on_observations``'s shapes.

    Args:
        X: Expected ``batch_shape x n' x d``.
        Y: Expected ``batch_shape' x n' x 1``.
        noise: None, or shaped like ``Y``.
        dim: The input dimension ``d`` of the model.
    """
    if Y.dim() < 2 or Y.shape[-1] != 1:
        raise UnsupportedError(
            f"Y must have shape batch_shape x n' x 1, got {tuple(Y.shape)}."
        )
    check_test_inputs(X, dim)
    check_new_observations(X, Y, noise)


def dtc_posterior(
    state: NystromState,
    X: Tensor,
    mean_module: Mean,
    covar_module: Kernel,
    likelihood: Likelihood,
    outcome_transform: OutcomeTransform | None,
    observation_noise: bool | Tensor = False,
) -> GPyTorchPosterior | TransformedPosterior:
    r"""The DTC posterior of ``state`` at ``X``, in the data's units.

    Args:
        state: The model's posterior state.
        X: A ``batch_shape x q x d`` tensor of input-transformed points.
        mean_module: The prior mean.
        covar_module: The kernel.
        likelihood: The likelihood (for ``observation_noise=True``).
        outcome_transform: The outcome transform to undo, or None.
        observation_noise: As for :func:`added_noise`.

    Returns:
        A posterior over ``broadcast(batch_shape, state batch) x q x 1``.
    """
    readout, transform = state.readout, outcome_transform
    prior_mean = mean_module(X)
    # GPyTorch's switch for means alone: an exact GP's prediction strategy then
    # returns a zero covariance; here no covariance is folded or formed.
    means_only = gpytorch_settings.skip_posterior_variances.on()
    if means_only or observation_noise is False or observation_noise is None:
        # Rows on demand, and a plain ``Standardize`` undone on the operator's
        # pieces: BoTorch's own untransform wraps the covariance in diagonal
        # products, whose rows are read by forming the whole matrix.
        scale = standardize_scale(transform)
        if scale is not None:
            prior_mean = transform.means.reshape(()) + scale * prior_mean
            transform = None
        if means_only:
            delta = readout.mean(X)
            delta = delta if scale is None else scale * delta
            q = delta.shape[-1]
            covar = ZeroLinearOperator(
                *delta.shape, q, dtype=delta.dtype, device=delta.device
            )
        else:
            delta, covar = readout.lazy(X, covar_module(X), scale=scale)
    else:
        delta, covar = readout(X, covar_module(X).to_dense())
    mean = prior_mean + delta
    # Fantasies share a covariance (it does not depend on the outcomes): the
    # expansion over them is a view.
    shape = torch.broadcast_shapes(mean.shape, covar.shape[:-1])
    mean = mean.expand(shape)
    if covar.shape[:-1] != shape:
        covar = covar.expand(shape + covar.shape[-1:])
    noise = added_noise(observation_noise, likelihood, covar.shape[:-1])
    if noise is not None:
        covar = covar + torch.diag_embed(noise)
    # A linear operator, as an exact GP's posterior has: torch's own MVN would
    # factorise the dense matrix eagerly and fail on a singular (but PSD)
    # covariance, where gpytorch's sampling adds jitter as needed.
    distribution = MultivariateNormal(mean, to_linear_operator(covar))
    posterior = GPyTorchPosterior(distribution=distribution)
    if transform is not None:
        posterior = transform.untransform_posterior(posterior, X=X)
    return posterior


def dtc_marginals(
    state: NystromState,
    X: Tensor,
    mean_module: Mean,
    covar_module: Kernel,
    outcome_transform: OutcomeTransform | None,
) -> tuple[Tensor, Tensor] | None:
    r"""The DTC posterior's means and variances at points, each taken alone.

    What :func:`dtc_posterior`'s ``mean`` and ``variance`` are without
    observation noise, read from the same folded read-out, but with no
    covariance between the points and no distribution or linear operator
    around them. A ``q = 1`` analytic acquisition reads only these, hundreds
    of times per maximisation, where building the posterior object cost
    several times the arithmetic (2.3 ms per posterior against 0.4 ms for
    the kernel rows of 8 points and 382 inducing points, one thread).

    Args:
        state: The model's posterior state.
        X: A ``batch_shape x q x d`` tensor of input-transformed points.
        mean_module: The prior mean.
        covar_module: The kernel.
        outcome_transform: The outcome transform to undo, or None.

    Returns:
        The ``batch_shape x q`` means and variances in the data's units, or
        None where the read-out does not apply: a batched state (fantasies)
        or an outcome transform other than a plain ``Standardize``.
    """
    readout = state.readout
    scale = standardize_scale(outcome_transform)
    if readout.covariance_root is None or (
        outcome_transform is not None and scale is None
    ):
        return None
    prior = DiagLinearOperator(kernel_diagonal(covar_module, X))
    delta, covar = readout.lazy(X, prior, scale=scale)
    prior_mean = mean_module(X)
    if scale is not None:
        prior_mean = outcome_transform.means.reshape(()) + scale * prior_mean
    return prior_mean + delta, covar.diagonal()


def latent_distribution(
    state: NystromState, x: Tensor, mean_module: Mean, covar_module: Kernel
) -> MultivariateNormal:
    r"""The latent DTC posterior at ``x``, in the model's (transformed) units.

    Args:
        state: The model's posterior state.
        x: A ``batch_shape x q x d`` tensor of input-transformed points.
        mean_module: The prior mean.
        covar_module: The kernel.

    Returns:
        A ``MultivariateNormal`` over the ``q`` points.
    """
    delta, covar = state.readout(x, covar_module(x).to_dense())
    mean = mean_module(x) + delta
    shape = torch.broadcast_shapes(mean.shape, covar.shape[:-1])
    covar = covar.expand(shape + covar.shape[-1:])
    return MultivariateNormal(mean.expand(shape), to_linear_operator(covar))


def absorbed(
    state: NystromState,
    X: Tensor,
    Y: Tensor,
    mean_module: Mean,
    noise: Tensor,
    graph: bool,
) -> tuple[NystromState, DTCStatistics]:
    r"""The state with more observations, by a Woodbury step on its posterior.

    One mechanism with the bandits' online model, batched over fantasies: no
    new ``m x m`` factorisation.

    Args:
        state: The model's posterior state (unchanged).
        X: A ``batch_shape x n' x d`` tensor of input-transformed inputs.
        Y: A ``batch_shape' x n' x 1`` tensor of outcome-transformed observations.
        mean_module: The prior mean.
        noise: The ``batch_shape x n'`` noise variances (shaped like the inputs,
            not the fantasies: see ``WeightPosterior.absorb``).
        graph: Whether to record a graph: where the new observations carry one,
            as acquisition functions that look ahead (qKG, qNIPV) differentiate
            the fantasy model with respect to ``X``. A loop that chains
            conditionings passes plain data and keeps no graph.

    Returns:
        The new state and the new observations' statistics.
    """
    online = state.posterior.copy()
    with torch.set_grad_enabled(graph):
        residual = Y.squeeze(-1) - mean_module(X)
        new = online.absorb(state.embedding, X, residual, noise)
    return NystromState(state.embedding, online), new


def new_noise(noise: Tensor | None, likelihood: Likelihood, X: Tensor) -> Tensor:
    r"""The noise variances of new observations, for ``condition_on_observations``.

    Args:
        noise: Their ``batch_shape x n' x 1`` noise variances (outcome-transformed
            units, floored as gpytorch's fixed-noise likelihood floors them:
            exact zeros break the update), or None for the inferred noise level.
        likelihood: The model's likelihood (a fixed-noise model needs ``noise``).
        X: The ``batch_shape x n' x d`` new inputs.

    Returns:
        The ``batch_shape x n'`` noise variances (shaped like the inputs, not
        the fantasies: see ``WeightPosterior.absorb``).
    """
    if noise is not None:
        return floor_fixed_noise(noise.squeeze(-1))
    if isinstance(likelihood, FixedNoiseGaussianLikelihood):
        raise UnsupportedError(
            "A fixed-noise model needs the noise of new observations."
        )
    return likelihood.noise.expand(X.shape[:-1])


def fantasy_noise(noise: Tensor, new: Tensor) -> Tensor:
    r"""A fixed-noise fantasy model's noise variances, laid out as ``SingleTaskGP``'s.

    Args:
        noise: The model's fixed noise variances, ``n`` (or, for a fantasy
            model, ``batch_shape x n``).
        new: The ``batch_shape' x n'`` noise variances of the fantasies.

    Returns:
        The ``broadcast(batch_shape, batch_shape') x (n + n')`` noise variances,
        the model's first.
    """
    batch = torch.broadcast_shapes(noise.shape[:-1], new.shape[:-1])
    parts = [noise, new.to(noise)]
    return torch.cat([p.expand(*batch, p.shape[-1]) for p in parts], dim=-1)


def standardize_scale(transform: OutcomeTransform | None) -> Tensor | None:
    r"""The standard deviation of a trained, single-output ``Standardize``.

    Not of a subclass: ``StratifiedStandardize`` scales per input.

    Args:
        transform: The model's outcome transform, or None.

    Returns:
        A scalar tensor, or None for any other transform.
    """
    if (
        type(transform) is not Standardize
        or transform._outputs is not None
        or transform.stdvs.numel() != 1
        or not bool(transform._is_trained)
    ):
        return None
    return transform.stdvs.reshape(())


def added_noise(
    observation_noise: bool | Tensor, likelihood: Likelihood, shape: torch.Size
) -> Tensor | None:
    r"""The noise variances ``posterior(X, observation_noise)`` adds.

    Args:
        observation_noise: False, True (the likelihood's noise; for fixed noise
            the mean training noise, as BoTorch's ``fantasize`` takes) or a
            ``batch_shape x q x 1`` tensor (outcome-transformed units).
        likelihood: The model's likelihood.
        shape: The ``batch_shape x q`` shape of the posterior.

    Returns:
        A tensor of ``shape``, or None for no noise.
    """
    if isinstance(observation_noise, Tensor):
        check_observation_noise(observation_noise)
        if observation_noise.shape[-1] == 1:
            observation_noise = observation_noise.squeeze(-1)
        return observation_noise.expand(shape)
    if not observation_noise:
        return None
    noise = likelihood.noise
    if isinstance(likelihood, FixedNoiseGaussianLikelihood):
        noise = noise.mean(-1, keepdim=True)
    return noise.expand(shape)
