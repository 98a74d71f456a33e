#!/usr/bin/env python3
r"""The parts of :class:`~botorch_sketch.models.nystrom_gp.NystromGP`, one idea a file.

``NystromGP`` is one class (Ax and pickles name it), assembled in
:mod:`botorch_sketch.models.nystrom_gp` from these mixins, which hold no state of
their own beyond the attributes ``NystromGP.__init__`` starts through them:

- :mod:`~botorch_sketch.models.nystrom.data`: the raw training data, the one
  place the input transform meets them (``transformed_train_X``), the targets
  the outcome transform derives from them, and moving, copying and growing them.
- :mod:`~botorch_sketch.models.nystrom.inducing`: the inducing set, a rule's
  choice among the training inputs or fixed inputs, and whether it makes the
  model the exact GP.
- :mod:`~botorch_sketch.models.nystrom.fitting`: ``fit_gpytorch_mll``'s hooks,
  the fitting options, the fitting subset and the exact regime's single fit.
- :mod:`~botorch_sketch.models.nystrom.state`: the Nystrom embedding, the
  sufficient statistics and the cached weight posterior behind ``posterior``.
- :mod:`~botorch_sketch.models.nystrom.data_statistics`: statistics of data held
  elsewhere (sharded data summed on other machines) in place of the rows.

The mixins read each other's attributes through the one class they make up;
they are not meant to be used apart.
"""
