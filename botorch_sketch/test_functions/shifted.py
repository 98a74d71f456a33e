r"""BoTorch test functions with their optimum moved off the box's centre."""

from __future__ import annotations

import torch
from botorch.test_functions.synthetic import SyntheticTestFunction
from torch import Tensor


class ShiftedProblem(SyntheticTestFunction):
    r"""A test function with its optimum moved, inside the same box.

    ``f(x) = base(x - s)`` with a fixed shift ``s``: each coordinate of ``s`` is
    ``fraction`` times the box's width times a uniform draw from ``[-1, 1]``
    (seeded by ``seed``). The box is ``base``'s default one; the function
    inside is ``base`` built on a box widened by the largest shift (Ackley and
    Levy are defined everywhere). The optimal value is ``base``'s, at its
    optimisers plus ``s``, which must lie in the box. Inputs are ``b x dim``
    (or ``batch x q x dim``), values ``b`` (``batch x q``), as ``base``'s.

    Example:
        >>> ackley = ShiftedProblem(Ackley, dim=20, noise_std=0.5, negate=True)
    """

    def __init__(
        self,
        base: type[SyntheticTestFunction],
        dim: int,
        fraction: float = 0.35,
        seed: int = 0,
        noise_std: float | None = None,
        negate: bool = False,
    ) -> None:
        r"""Shift ``base(dim=dim)``.

        Args:
            base: The test function's class (its constructor takes ``dim`` and
                ``bounds``).
            dim: The input dimension.
            fraction: The largest shift per coordinate, a fraction of its width.
            seed: Seeds the shift.
            noise_std: Standard deviation of the observation noise.
            negate: If True, negate the function.
        """
        box = base(dim=dim)
        bounds = box.bounds.detach().clone()
        width = bounds[1] - bounds[0]
        generator = torch.Generator().manual_seed(seed)
        u = 2.0 * torch.rand(dim, generator=generator, dtype=bounds.dtype) - 1.0
        shift = fraction * width * u
        optimizers = box.optimizers + shift
        if not bool(((optimizers >= bounds[0]) & (optimizers <= bounds[1])).all()):
            raise ValueError(
                f"A shift of {fraction} of the width moves {base.__name__}'s "
                "optimum out of its box; use a smaller fraction."
            )
        self.dim = dim
        self.continuous_inds = list(range(dim))
        self._optimizers = [tuple(x.tolist()) for x in optimizers]
        self._optimal_value = box.optimal_value
        self._is_minimization_by_default = box.is_minimization_problem
        super().__init__(
            noise_std=noise_std,
            negate=negate,
            bounds=[tuple(b) for b in bounds.T.tolist()],
            dtype=bounds.dtype,
        )
        wide = torch.stack([bounds[0] - fraction * width, bounds[1] + fraction * width])
        self.base = base(dim=dim, bounds=[tuple(b) for b in wide.T.tolist()])
        self.register_buffer("shift", shift)

    def _evaluate_true(self, X: Tensor) -> Tensor:
        return self.base.evaluate_true(X - self.shift.to(X))
