import importlib
import sys
import warnings

import pytest
import torch
from gpytorch.kernels import RBFKernel

from botorch_sketch.bandits.dtc_ucb import DTCUCB
from botorch_sketch.bandits.linucb import LinUCB
from botorch_sketch.deprecation import renamed_keywords
from botorch_sketch.sketching.confidence import bkb_width
from botorch_sketch.sketching.ridge import OnlineRidge


def test_renamed_keyword_warns_and_forwards():
    @renamed_keywords(old="new")
    def f(new=0):
        return new

    with pytest.warns(DeprecationWarning, match="'old' is deprecated, use 'new'"):
        assert f(old=3) == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert f(new=4) == 4
    with pytest.raises(TypeError, match="both 'old'"):
        f(old=1, new=2)


def test_dtc_ucb_refactor_every():
    arms = torch.rand(5, 1, dtype=torch.double)
    with pytest.warns(DeprecationWarning, match="refactorise_every"):
        policy = DTCUCB(arms, RBFKernel(), 0.1, refactor_every=7)
    assert policy.refactorise_every == 7
    with pytest.warns(DeprecationWarning, match="refactorise_every"):
        policy.refactor_every = 9
    assert policy.refactorise_every == 9


def test_lambda_renamed_to_noise_var():
    with pytest.warns(DeprecationWarning, match="noise_var"):
        ridge = OnlineRidge(3, ridge=0.5)
    assert ridge.noise_var == 0.5
    with pytest.warns(DeprecationWarning, match="noise_var"):
        assert ridge.ridge == 0.5
    with pytest.warns(DeprecationWarning, match="noise_var"):
        assert LinUCB(3, ridge=0.25).solver.noise_var == 0.25
    with pytest.warns(DeprecationWarning, match="noise_var"):
        old = bkb_width(2.0, 10, 0.3, regularizer=0.09)
    assert old == bkb_width(2.0, 10, 0.3, noise_var=0.09)


def test_models_incremental_shim():
    sys.modules.pop("botorch_sketch.models.incremental", None)
    with pytest.warns(DeprecationWarning, match="incremental_nystrom_model"):
        shim = importlib.import_module("botorch_sketch.models.incremental")
    from botorch_sketch.models import IncrementalNystromModel

    assert shim.IncrementalNystromModel is IncrementalNystromModel
