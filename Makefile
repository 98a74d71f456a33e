# Two commands do all set-up on a fresh machine:
#   make demo   the headline in about a minute (2 idle cores; two to four times that
#               on a busy machine): a BO loop's iterations with the carried
#               IncrementalGP stay flat while the exact SingleTaskGP's grow
#   make test   lint and the fast tests (make test-slow: the slow half)
# Each creates .venv if needed and installs the CPU build of torch first, by
# exact version, so that nothing pulls a CUDA build. make demo installs only
# torch and the package; make bench and make tune add the tune extra (Ax and
# scikit-learn, which the tuning, replay and digits benchmarks use); make test
# adds the test extra (also Ray and the notebook runner); make docs the docs extra
# (MkDocs and its plugins) and builds the site into site/. Each has its own stamp.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_VERSION := 2.13.0
STAMP := $(VENV)/.installed
TUNE_STAMP := $(VENV)/.installed-tune
TEST_STAMP := $(VENV)/.installed-test
DOCS_STAMP := $(VENV)/.installed-docs

.PHONY: install install-test demo bench tune test test-slow lint docs clean

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

# The docs extra on top (MkDocs, Material, mkdocstrings, mkdocs-jupyter).
$(DOCS_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e ".[docs]"
	touch $(DOCS_STAMP)

install: $(STAMP)

install-test: $(TEST_STAMP)

# Hartmann-6, 50 points per iteration up to n = 1500, IncrementalGP against a
# warm-started SingleTaskGP: a table of CPU seconds per iteration and best value
# found, and benchmark-results/demo-small.png. The benchmarks are the
# repository's benchmarks/ folder (not installed): make runs them from its root.
demo: $(STAMP)
	$(PY) -m benchmarks demo

# make bench BENCH=bandits (or linear): the large budget of another benchmark.
BENCH ?= inference
bench: $(TUNE_STAMP)
	$(PY) -m benchmarks $(BENCH) --budget large

# Tune an SVM on digits through Ax with GradientSubsetGP (checkpointed; add
# ARGS=--resume to continue a killed run).
tune: $(TUNE_STAMP)
	$(VENV)/bin/botorch-sketch tune --dataset digits --estimator svm --trials 300 \
		--model subset --acquisition qlogei $(ARGS)

lint: $(TEST_STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# The suite in two halves: make test (lint and the tests under five seconds) and
# make test-slow (the tests marked slow: tutorials, benchmarks, worker processes).
test: lint
	$(PY) -m pytest -m "not slow"

test-slow: $(TEST_STAMP)
	$(PY) -m pytest -m slow

# The documentation site into site/, warnings as errors. The tutorials are shown
# with the outputs they are committed with (nothing is executed). Pages are
# files (use_directory_urls: false), so site/index.html works opened from disk;
# the search box needs a server ($(VENV)/bin/mkdocs serve).
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) benchmark-results .pytest_cache .ruff_cache
