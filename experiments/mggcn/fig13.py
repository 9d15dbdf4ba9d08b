"""MG-GCN Fig. 13: speedup of MG-GCN on 1-4 GPUs over the library's GCN on one GPU (paper: over DGL,
1-8 A100s), the 2x512 model; reads Fig. 10's runs (``derives_from``)."""

from __future__ import annotations

from harness.registry import register_experiment

from . import PAPER_HARDWARE_A100
from .comparison import A100_VALUES, SPEEDUP_VS_DGL_A100, ComparisonExperiment


@register_experiment
class Fig13(ComparisonExperiment):
    title = "Speedup over the library's GCN on one GPU: MG-GCN (MG-GCN Fig. 13)"
    figure_number, figure_title = "Fig. 13", "MG-GCN Fig. 13: speedup over the library's GCN on one GPU"
    view, default_datasets = "speedup", ("cora", "arxiv", "products", "reddit")
    roles = ("paper_method", "library")               # the A100 figures: no CAGNET
    paper_gpus, paper_speedups, paper_vs_cagnet = "8x A100", SPEEDUP_VS_DGL_A100, {}
    paper_hardware = PAPER_HARDWARE_A100
    paper_values = A100_VALUES
    derives_from = ("mggcn.fig10",)
    differs_from_paper = ("1, 2 and 4 GPUs instead of 1-8 A100s; speedups over PyG's GCNConv on one GPU where DGL "
                          "has only a CPU build (the paper's are over DGL on one GPU).")
