"""At n = 200,000 nothing of size n x n may be formed: peak memory stays small."""

import json
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import json, resource, torch
    from botorch.models.transforms import Normalize
    from botorch_sketch import NystromGP, UniformSelector

    def peak_mb():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    torch.manual_seed(0)
    n, d = 200_000, 6
    X = torch.rand(n, d, dtype=torch.double)
    Y = torch.sin(3 * X).sum(-1, keepdim=True)
    Y = Y + 0.3 * torch.randn(n, 1, dtype=torch.double)
    base = peak_mb()
    rule = UniformSelector(100)
    model = NystromGP(X, Y, inducing=rule, input_transform=Normalize(d))
    loss = model.compute_custom_loss()
    loss.backward()
    post = model.posterior(torch.rand(16, 4, d, dtype=torch.double))
    grown = peak_mb() - base
    finite = bool(torch.isfinite(post.mean).all())
    print(json.dumps({"grown_mb": grown, "finite": finite}))
    """
)


# Peak resident memory of a CPU process: on CUDA the tensors would not be in it.
@pytest.mark.slow
@pytest.mark.cpu_only
def test_memory_stays_bounded_at_two_hundred_thousand_points():
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["finite"]
    # n x n in float64 would be 320 GB; the data themselves are ~10 MB.
    assert result["grown_mb"] < 500, result
