"""XGNN (VLDB'24) artifacts; the paper's testbed was a DGX-1 (8x V100, hybrid cube-mesh NVLink)."""

from harness.palette import Palette


PAPER_HARDWARE = "DGX-1: 8x V100 over a hybrid cube-mesh of NVLink 2.0, CUDA 11"
# the label of the paper's values where a figure or table shows them beside ours
PAPER_SOURCE = "paper (8x V100)"

PAPER_TITLE = "XGNN: boosting multi-GPU GNN training via global GNN memory store (VLDB'24)"

# XGNN's series that are no system (a system's colour is the systems' palette's)
PALETTE = Palette("XGNN", {
    "Sampler": "#6baed6", "Trainer": "#08519c",                      # the epoch's two stages (Figs. 10, 12)
    "topology": "#8c6d31", "features": "#e7ba52",                    # the stores in GPU memory (Fig. 12)
    # the KHop sampling (Fig. 14): the whole of it and its kernel, original and batched
    "original KHop": "#bdbdbd", "original KHop kernel": "#525252",
    "batched KHop": "#fdae6b", "batched KHop kernel": "#e6550d",
    # memory access paths (Figs. 6 and 6(b)), by probe
    "local": "#2ca02c", "p2p_remote": "#1f77b4", "um": "#9467bd", "um_remote": "#8c564b",
    "host_zero_copy": "#7f7f7f", "vmm_local": "#d62728", "vmm_remote": "#ff7f0e",
    # the paper's L2 TLB reach (Fig. 6(b)): over VMM handles, and over other memory
    "paper: VMM reach": "#555555", "paper: reach": "#999999"})
