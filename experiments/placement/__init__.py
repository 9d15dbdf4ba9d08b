"""ICS'22 data placement artifacts (Song and Jiang, "Rethinking Graph Data Placement for Graph
Neural Network Training on Multiple GPUs"); the paper's testbed is described in its Sec. 5.1."""

PAPER_HARDWARE = ("GPU workstation: 8x V100 32 GB connected all together through NVSwitch, "
                  "2x Xeon Gold 6248, 512 GB RAM; '(2+2)GPU'/'(2*4)GPU' emulate NVLink-bridge pairs "
                  "by reading only from the paired GPU")

PAPER_TITLE = "Rethinking graph data placement for graph neural network training on multiple GPUs (ICS'22)"
