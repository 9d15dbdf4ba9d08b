"""WholeGraph (SC'22) artifacts; the paper's testbed was a DGX-A100."""

from harness.palette import Palette


PAPER_GPUS = "8x A100"          # the paper's series are labelled "paper (8x A100)"
PAPER_HARDWARE = "DGX-A100: 8x A100 SXM4 over NVSwitch (300 GB/s per direction), CUDA 11.4"

PAPER_TITLE = "WholeGraph: a fast graph neural network training framework with multi-GPU distributed shared memory architecture (SC'22), with NVIDIA's WholeGraph blog"

# WholeGraph's series that are no system (a system's colour is the systems' palette's)
PALETTE = Palette("WholeGraph", {
    "sampling": "#f2a93b", "gathering": "#8fbcd4", "training": "#4d4d4d",   # an epoch's stages (Figs. 9, 11)
    "graph structure": "#8da0cb", "node features": "#66c2a5",              # memory per GPU (Table IV, and training)
    "UM": "C3", "P2P": "C0", "local": "C7", "host": "C4",                  # Table I's access paths
    "GCN": "#1f77b4", "GraphSAGE": "#2ca02c", "GAT": "#d62728"})            # the models (Fig. 13)
