"""MG-GCN Fig. 11: speedup of MG-GCN and CAGNET's 1D algorithm over the library's GCN on one GPU
(paper: over DGL, 1-8 V100s), the 2x512 model; reads Fig. 10's runs (``derives_from``)."""

from __future__ import annotations

from harness.registry import register_experiment

from . import PAPER_HARDWARE_V100
from .comparison import SPEEDUP_VS_CAGNET_V100, SPEEDUP_VS_DGL_V100, V100_VALUES, ComparisonExperiment


@register_experiment
class Fig11(ComparisonExperiment):
    title = "Speedup over the library's GCN on one GPU: MG-GCN and CAGNET 1D (MG-GCN Fig. 11)"
    figure_number, figure_title = "Fig. 11", "MG-GCN Fig. 11: speedup over the library's GCN on one GPU"
    view, default_datasets = "speedup", ("cora", "arxiv", "products", "reddit")
    paper_gpus, paper_speedups, paper_vs_cagnet = "8x V100", SPEEDUP_VS_DGL_V100, SPEEDUP_VS_CAGNET_V100
    paper_hardware = PAPER_HARDWARE_V100
    paper_values = V100_VALUES
    derives_from = ("mggcn.fig10",)
    differs_from_paper = ("1, 2 and 4 GPUs instead of 1-8 V100s; speedups over PyG's GCNConv on one GPU where DGL "
                          "has only a CPU build (the paper's are over DGL on one GPU); CAGNET re-implemented.")
