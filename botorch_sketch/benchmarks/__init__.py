#!/usr/bin/env python3
r"""Side-by-side benchmarks: ``python -m botorch_sketch.benchmarks --help``."""
