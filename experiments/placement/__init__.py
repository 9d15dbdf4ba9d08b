"""ICS'22 data placement artifacts (Song and Jiang, "Rethinking Graph Data Placement for Graph
Neural Network Training on Multiple GPUs"); the paper's testbed is described in its Sec. 5.1."""

from harness.palette import Palette

PAPER_HARDWARE = ("GPU workstation: 8x V100 32 GB connected all together through NVSwitch, "
                  "2x Xeon Gold 6248, 512 GB RAM; '(2+2)GPU'/'(2*4)GPU' emulate NVLink-bridge pairs "
                  "by reading only from the paired GPU")

PAPER_TITLE = "Rethinking graph data placement for graph neural network training on multiple GPUs (ICS'22)"

# ICS'22's series that are no implementation (a policy's colour is its registry entry's:
# experiments/placement/paper.py's policy_colour): Our with locality-aware sampling, a policy no
# figure knows, chance-level loss, the measured launch floor
PALETTE = Palette("ICS'22", {"Our+LAS": "#08306b", "another policy": "#999999", "chance": "#636363",
                             "launch floor": "#d62728"})
