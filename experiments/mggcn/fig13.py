"""MG-GCN Fig. 13: speedup of MG-GCN on 1-4 GPUs over the library's GCN on one GPU (paper: over DGL,
1-8 A100s), the 2x512 model; reads Fig. 10's runs (``derives_from``)."""

from __future__ import annotations

from harness.registry import register_experiment

from . import PAPER_HARDWARE_A100
from .comparison import A100Comparison


@register_experiment
class Fig13(A100Comparison):
    title = "Speedup over the library's GCN on one GPU: MG-GCN (MG-GCN Fig. 13)"
    figure_number, figure_title = "Fig. 13", "MG-GCN Fig. 13: speedup over the library's GCN on one GPU"
    view, default_datasets = "speedup", ("cora", "arxiv", "products", "reddit")
    paper_hardware = PAPER_HARDWARE_A100
    differs_from_paper = ("1, 2 and 4 GPUs instead of 1-8 A100s; speedups over PyG's GCNConv on one GPU where DGL "
                          "has only a CPU build (the paper's are over DGL on one GPU).")
