"""ICS'22 data placement artifacts (Song and Jiang, "Rethinking Graph Data Placement for Graph
Neural Network Training on Multiple GPUs"); the paper's testbed is described in its Sec. 5.1."""

from harness.palette import PALETTE as SYSTEMS, Palette

PAPER_HARDWARE = ("GPU workstation: 8x V100 32 GB connected all together through NVSwitch, "
                  "2x Xeon Gold 6248, 512 GB RAM; '(2+2)GPU'/'(2*4)GPU' emulate NVLink-bridge pairs "
                  "by reading only from the paired GPU")

PAPER_TITLE = "Rethinking graph data placement for graph neural network training on multiple GPUs (ICS'22)"

# ICS'22's series: one colour per placement policy in every placement figure (systems in their palette
# colour: Our is ICS'22's Algorithm 1, XGNN Fig. 13's CliqueOpt; Clique is Quiver's; the Solver is
# XGNN's), the partitioning baselines in colours no system has
PALETTE = Palette("ICS'22", {
    "NAIVE": "#bdbdbd", "RAND": "#525252", "METIS": "#e7ba52", "PG (re-impl.)": SYSTEMS["PaGraph"],
    "Our": SYSTEMS["ours"], "Our+LAS": "#08306b", "Clique": SYSTEMS["Quiver"], "Solver": SYSTEMS["XGNN"],
    "another policy": "#999999", "chance": "#636363", "launch floor": "#d62728"})
