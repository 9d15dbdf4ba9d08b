"""``python tests/lifecycle_run.py ARGS``: the harness CLI with the lifecycle test experiment.

Run as a script on purpose: spawned ranks re-import the parent's main script, which registers
the experiment in them as well.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tests.lifecycle_targets  # noqa: E402,F401  (registers zzlife.steps)

if __name__ == "__main__":
    from harness.cli import main

    sys.exit(main(sys.argv[1:]))
