#!/usr/bin/env bash
# The checks that need a GPU, in one go: the CUDA rerun of the model tests
# (tests/cuda), then the throughput and scale benchmarks with --device cuda, then
# the online loops beside the CPU (scripts/online_loops_on_device.py).
#
#   scripts/cuda-check.sh [OUT]    (OUT defaults to benchmark-results)
#
# Runs from the repository root with the python on the PATH (PYTHON=... picks
# another), with or without the package installed. Each part has its own time
# limit (TESTS_S, THROUGHPUT_S, SCALE_S, ONLINE_S seconds), so that one part that runs
# long still leaves the others their turn; every log lands in OUT.
# SCALE_BUDGET=small runs the smaller scale cases.
set -u
out=${1:-benchmark-results}
py=${PYTHON:-python3}
device=${DEVICE:-cuda}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
mkdir -p "$out"
status=0

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 |
    tee "$out/gpu.txt"
"$py" - <<'PY' 2>&1 | tee -a "$out/gpu.txt"
import platform, torch, botorch, gpytorch, linear_operator
print("python", platform.python_version(), "torch", torch.__version__,
      "cuda", torch.version.cuda, "botorch", botorch.__version__,
      "gpytorch", gpytorch.__version__, "linear_operator", linear_operator.__version__)
print("CUDA available:", torch.cuda.is_available(),
      torch.cuda.get_device_name() if torch.cuda.is_available() else "")
PY

# pytest-xdist, if there, runs the tests on several workers, all on the one GPU.
workers=()
if "$py" -c "import xdist, pytest_timeout" 2>/dev/null; then
    workers=(-n "${WORKERS:-6}" --timeout 240)
fi
timeout "${TESTS_S:-300}" "$py" -m pytest tests/cuda -q -p no:cacheprovider \
    "${workers[@]}" -o addopts="-rfEs --strict-markers" --durations=10 \
    2>&1 | tee "$out/tests-cuda.log"
status=$((status | PIPESTATUS[0]))

for bench in throughput scale; do
    case $bench in
    throughput) limit=${THROUGHPUT_S:-90} budget=large ;;
    scale) limit=${SCALE_S:-300} budget=${SCALE_BUDGET:-large} ;;
    esac
    timeout "$limit" "$py" -m benchmarks "$bench" --budget "$budget" \
        --device "$device" --out "$out" 2>&1 | tee "$out/$bench.log"
    status=$((status | PIPESTATUS[0]))
done
timeout "${ONLINE_S:-150}" "$py" scripts/online_loops_on_device.py --device "$device" \
    --steps 1000 2>&1 | tee "$out/online-loops.md"
status=$((status | PIPESTATUS[0]))
exit "$status"
