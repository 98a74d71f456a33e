#!/usr/bin/env python3
r"""``python -m botorch_sketch.tune``: ``botorch-sketch tune``."""

import sys

from botorch_sketch.tune.cli import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m botorch_sketch.tune"))
