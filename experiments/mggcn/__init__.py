"""MG-GCN artifacts: Tables 1-3, Figs. 5-13 and the per-GPU peak-memory comparison.

MG-GCN measured on two machines (Sec. 6.1): Table 3 and Figs. 12-13 on the DGX-A100, Figs. 6-8
and 10-11 on the DGX-1 (V100); Figs. 5 and 9 do not say which.
"""

from harness.palette import Palette


PAPER_HARDWARE_A100 = ("DGX-A100: 8x A100 80 GB, every pair over NVSwitch (12 NVLinks, 600 GB/s "
                       "bidirectional), 2x AMD Rome 7742; CUDA 11.4, NCCL 2.11.4, cuSPARSE/cuBLAS")
PAPER_HARDWARE_V100 = ("DGX-1: 8x V100 32 GB (900 GB/s memory), 6 NVLinks per GPU in the hybrid "
                       "cube-mesh (asymmetric), 2x Xeon E5-2698; CUDA 11.4, NCCL 2.11.4")
PAPER_HARDWARE = f"{PAPER_HARDWARE_A100}; and {PAPER_HARDWARE_V100}"

PAPER_TITLE = "MG-GCN: a scalable multi-GPU GCN training framework"

# MG-GCN's series that are no system (a system's colour is the systems' palette's)
PALETTE = Palette("MG-GCN", {
    # Fig. 5's operations
    "spmm": "#1f77b4", "gemm": "#ff7f0e", "activation": "#2ca02c", "loss": "#d62728", "allreduce": "#9467bd",
    "adam": "#8c564b",
    "compute": "tab:blue", "comm": "gold",     # the timeline's lanes, the paper's: computation blue, communication yellow
    # MG-GCN's own colour lightened (its kernels with fresh allocations, its one-GPU time), PyTorch autograd
    "MG-GCN light": "#9edae5", "autograd": "#393b79",
    "DistGNN, 1 socket": "0.75", "DistGNN, best sockets": "0.45",          # Table 2's CPU baseline
    "no overlap": "0.55", "overlap": "tab:blue"})                          # Fig. 8: communication (not) overlapped
