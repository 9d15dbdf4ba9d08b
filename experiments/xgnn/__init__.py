"""XGNN (VLDB'24) artifacts; the paper's testbed was a DGX-1 (8x V100, hybrid cube-mesh NVLink)."""

PAPER_HARDWARE = "DGX-1: 8x V100 over a hybrid cube-mesh of NVLink 2.0, CUDA 11"

PAPER_TITLE = "XGNN: boosting multi-GPU GNN training via global GNN memory store (VLDB'24)"
