"""MG-GCN Fig. 12: epoch time of MG-GCN on 1-4 GPUs and the libraries' GCN on one (paper: MG-GCN on
1-8 A100s of a DGX-A100 against DGL; CAGNET did not build with CUDA 11), the 2x512 model; reads
Fig. 10's runs (``derives_from``)."""

from __future__ import annotations

from harness.registry import register_experiment

from . import PAPER_HARDWARE_A100
from .comparison import A100Comparison


@register_experiment
class Fig12(A100Comparison):
    title = "Epoch time: MG-GCN vs the libraries' GCN, 1-4 GPUs (MG-GCN Fig. 12)"
    figure_number, figure_title = "Fig. 12", "MG-GCN Fig. 12: epoch time (s) vs GPUs, MG-GCN, DGL, PyG"
    view, default_datasets = "epoch", ("cora", "arxiv", "products", "reddit")
    paper_hardware = PAPER_HARDWARE_A100
    differs_from_paper = ("1, 2 and 4 GPUs instead of 1-8 A100s; DGL 2.1's CPU build times its GCN on the host's "
                          "cores (PyG's GCNConv on the GPU is the library baseline); every graph a stand-in.")
