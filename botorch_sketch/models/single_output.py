#!/usr/bin/env python3
r"""What every single-output model of this package answers as BoTorch's do.

BoTorch's base ``Model.subset_output`` raises a bare ``NotImplementedError``;
``SingleTaskGP`` returns itself for its one output, and code written for
several models asks it (``ModelListGP``, Ax's outcome subsetting). Models
without fantasies (:class:`~botorch_sketch.models.SGDLinearModel`,
:class:`~botorch_sketch.models.IncrementalNystromModel`) have no
``fantasize`` at all in BoTorch's base class: look-ahead acquisitions failed
on an ``AttributeError``; here they get an ``UnsupportedError`` that says so.
"""

from __future__ import annotations

from typing import Any

from botorch.exceptions.errors import UnsupportedError


class SingleOutputMixin:
    r"""``subset_output([0])`` is the model itself; other indices are refused."""

    def subset_output(self, idcs: list[int]) -> Any:
        r"""This model for ``idcs == [0]`` (its one output), as ``SingleTaskGP``.

        Args:
            idcs: The outputs to keep: ``[0]``.

        Returns:
            The model itself.
        """
        if list(idcs) != [0]:
            # NotImplementedError, as BoTorch's base class raises: callers such
            # as Ax's ``subset_model`` catch it and keep the whole model.
            raise NotImplementedError(
                f"{type(self).__name__} has one output; subset_output takes [0], "
                f"got {list(idcs)}."
            )
        return self


class NoFantasiesMixin:
    r"""``fantasize`` refused by name (qKG, qNIPV, sequential qMES need it)."""

    def fantasize(self, *args: Any, **kwargs: Any) -> Any:
        r"""Not supported: raises ``UnsupportedError``."""
        raise UnsupportedError(
            f"{type(self).__name__} does not support fantasies, which look-ahead "
            "acquisition functions (qKnowledgeGradient, "
            "qNegIntegratedPosteriorVariance, sequential qMaxValueEntropy) need; "
            "use NystromGP or GradientSubsetGP for those."
        )
