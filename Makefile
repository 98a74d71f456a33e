# Two commands do all set-up on a fresh machine:
#   make demo   the main job: NystromGP against SingleTaskGP, side by side
#   make test   lint and the test suite
# Each creates .venv if needed and installs the CPU build of torch first, by
# exact version, so that nothing pulls a CUDA build.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_VERSION := 2.13.0
STAMP := $(VENV)/.installed

.PHONY: install demo bench tune test lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==$(TORCH_VERSION)
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(PY) -m botorch_sketch.benchmarks inference --budget small

# make bench BENCH=bandits (or linear): the large budget of another benchmark.
BENCH ?= inference
bench: $(STAMP)
	$(PY) -m botorch_sketch.benchmarks $(BENCH) --budget large

# Tune an SVM on digits through Ax with GradientSubsetGP (checkpointed; add
# ARGS=--resume to continue a killed run).
tune: $(STAMP)
	$(VENV)/bin/botorch-sketch tune --dataset digits --estimator svm --trials 300 \
		--model subset --acquisition qlogei $(ARGS)

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

test: lint
	$(PY) -m pytest

clean:
	rm -rf $(VENV) benchmark-results .pytest_cache .ruff_cache
