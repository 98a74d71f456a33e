#!/usr/bin/env python3
r"""``python -m botorch_sketch.integrations.tune``: ``botorch-sketch tune``."""

import sys

from botorch_sketch.integrations.tune.cli import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m botorch_sketch.integrations.tune"))
