#!/usr/bin/env python3
r"""The parts of :class:`~botorch_sketch.models.nystrom_gp.NystromGP`, one idea each.

``NystromGP`` is one class (:mod:`botorch_sketch.models.nystrom_gp`); these
modules hold the objects it keeps and the functions that do its work, with
explicit arguments (fitting and the statistics of other data read the model
through its public attributes and methods). None of them imports the class.

- :mod:`~botorch_sketch.models.nystrom.data`: fitting the transforms to the
  training data, the one place the input transform meets them, the targets the
  outcome transform derives from them, growing, copying and moving them.
- :mod:`~botorch_sketch.models.nystrom.inducing`: the inducing set
  (:class:`~botorch_sketch.models.nystrom.inducing.InducingSet`), a rule's choice
  among the training inputs or fixed inputs, and the exact regime.
- :mod:`~botorch_sketch.models.nystrom.state`: the posterior state
  (:class:`~botorch_sketch.models.nystrom.state.NystromState`: embedding, weight
  posterior, read-out) and the statistics it is built from.
- :mod:`~botorch_sketch.models.nystrom.posterior`: the posterior read from the
  state, and the Woodbury step of ``condition_on_observations``.
- :mod:`~botorch_sketch.models.nystrom.fitting`: ``fit_gpytorch_mll``'s hook, the
  fitting options, the fitting subset and the exact regime's single fit.
- :mod:`~botorch_sketch.models.nystrom.data_statistics`: statistics of data held
  elsewhere (sharded data summed on other machines) in place of the rows.
"""
