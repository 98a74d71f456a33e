# Two commands do all set-up on a fresh machine:
#   make demo   the main job: NystromGP against SingleTaskGP, side by side
#   make test   lint and the test suite
# Each creates .venv if needed and installs the CPU build of torch first, by
# exact version, so that nothing pulls a CUDA build. make demo installs only
# torch and the package; make bench and make tune add the tune extra (Ax and
# scikit-learn, which the tuning, replay and digits benchmarks use); make test
# adds the test extra (also Ray and the notebook runner). Each has its own stamp.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_VERSION := 2.13.0
STAMP := $(VENV)/.installed
TUNE_STAMP := $(VENV)/.installed-tune
TEST_STAMP := $(VENV)/.installed-test

.PHONY: install install-test demo bench tune test lint clean

# torch first, by exact version, then the package alone.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==$(TORCH_VERSION)
	$(PY) -m pip install --quiet -e .
	touch $(STAMP)

# The tune extra on top (Ax, scikit-learn).
$(TUNE_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e ".[tune]"
	touch $(TUNE_STAMP)

# The test extra on top (pytest, ruff, Ax, Ray, scikit-learn, nbclient).
$(TEST_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(TEST_STAMP)

install: $(STAMP)

install-test: $(TEST_STAMP)

demo: $(STAMP)
	$(PY) -m botorch_sketch.benchmarks inference --budget small

# make bench BENCH=bandits (or linear): the large budget of another benchmark.
BENCH ?= inference
bench: $(TUNE_STAMP)
	$(PY) -m botorch_sketch.benchmarks $(BENCH) --budget large

# Tune an SVM on digits through Ax with GradientSubsetGP (checkpointed; add
# ARGS=--resume to continue a killed run).
tune: $(TUNE_STAMP)
	$(VENV)/bin/botorch-sketch tune --dataset digits --estimator svm --trials 300 \
		--model subset --acquisition qlogei $(ARGS)

lint: $(TEST_STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

test: lint
	$(PY) -m pytest

clean:
	rm -rf $(VENV) benchmark-results .pytest_cache .ruff_cache
