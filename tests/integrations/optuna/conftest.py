import pytest


@pytest.fixture
def pending_log(monkeypatch):
    """Record the pending points and training sizes passed to the acquisition."""
    # Here, not at the top: the test modules skip themselves without Optuna.
    from botorch_sketch.integrations.optuna import sampler as sampler_module

    calls = []
    original = sampler_module._suggest

    def spy(**kwargs):
        calls.append(
            {
                "n": len(kwargs["train_X"]),
                "pending": None
                if kwargs["pending_X"] is None
                else len(kwargs["pending_X"]),
                "failures": None
                if kwargs.get("failures") is None
                else len(kwargs["failures"][0]),
            }
        )
        return original(**kwargs)

    monkeypatch.setattr(sampler_module, "_suggest", spy)
    return calls


@pytest.fixture
def acqf_calls(monkeypatch):
    """Record the sampler's ``optimize_acqf`` calls: acquisition and keywords."""
    from botorch_sketch.integrations.optuna import acquisition as acquisition_module

    calls = []
    original = acquisition_module.optimize_acqf

    def spy(acq_function, **kwargs):
        calls.append((acq_function, kwargs))
        return original(acq_function=acq_function, **kwargs)

    monkeypatch.setattr(acquisition_module, "optimize_acqf", spy)
    return calls
