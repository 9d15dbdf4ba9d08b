"""``torchrun ... tests/torchrun_nodes.py OUT``: the ranks of torchrun's nodes gather a table split over
every rank with ``p2p_shared`` (tests/gather/targets.py ``reads_across_nodes``), node aware and not;
each rank writes what it found to ``OUT/rank<r>.json``."""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.launcher import launch  # noqa: E402
from tests.gather.targets import reads_across_nodes  # noqa: E402

if __name__ == "__main__":
    rank = int(os.environ["RANK"])
    results = launch(reads_across_nodes, (None, [True, False], 1001, 7, 400, 5),
                     world_size=int(os.environ["WORLD_SIZE"]), device="cpu", timeout_s=120)
    (Path(sys.argv[1]) / f"rank{rank}.json").write_text(json.dumps(results[rank]))
