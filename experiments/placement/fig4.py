"""ICS'22 Fig. 4: epoch breakdown on reddit with feature buffers of 0.1N, 0.2N and N/4 per GPU.

Simulated here for every topology: modeled loading time and local / peer / host access fractions
per policy (NAIVE, RAND, METIS, PaGraph, Our = Algorithm 1, Our+LAS). The paper's text gives the
loading share of the epoch and the access fractions quoted below (Sec. 5.2).
"""

from __future__ import annotations

from harness.experiment import PaperValue
from harness.registry import register_experiment

from .common import BreakdownExperiment

_S = "Sec. 5.2 (Fig. 4)"


@register_experiment
class Fig4(BreakdownExperiment):
    title = "ICS'22 Fig. 4: feature loading on reddit vs buffer size, policy and topology"
    dataset = "reddit"
    impls = ("naive", "random", "metis", "pagraph", "clique_opt")
    buffers = (("0.1N", 0.1), ("0.2N", 0.2), ("N/4", 0.25))
    quick_scale, full_scale = 0.02, 0.2
    figure_caption = ("ICS'22 Fig. 4 (reddit; paper buffers 0.1N = 53 MB, 0.2N = 107 MB, N/4 = 134 MB "
                      "per GPU; measured on 2GPU, (2+2)GPU and 4GPU).")
    paper_values = (
        PaperValue(_S, "naive", {"topology": "2GPU", "buffer": "0.1N"}, "loading_ratio", 0.5, "of epoch",
                   "data loading takes more than 50% of the epoch"),
        PaperValue(_S, "naive", {"topology": "2GPU", "buffer": "0.2N"}, "loading_ratio", 0.48, "of epoch"),
        PaperValue(_S, "metis", {}, "loading_ratio", 0.40, "of epoch", "about 40%"),
        PaperValue(_S, "clique_opt", {"topology": "2GPU"}, "loading_ratio", 0.30, "of epoch",
                   "30% on 2GPU and (2+2)GPU"),
        PaperValue(_S, "clique_opt", {"topology": "2GPU", "las": True}, "loading_ratio", 0.20, "of epoch",
                   "about 20% with LAS on 2GPU and (2+2)GPU"),
        PaperValue(_S, "metis", {"topology": "2GPU", "buffer": "0.2N"}, "local_fraction", 0.40, "fraction"),
        PaperValue(_S, "metis", {"topology": "2GPU", "buffer": "0.2N"}, "peer_fraction", 0.27, "fraction"),
        PaperValue(_S, "metis", {"topology": "2GPU", "buffer": "0.2N"}, "host_fraction", 0.33, "fraction"),
        PaperValue(_S, "clique_opt", {"topology": "2GPU", "buffer": "0.2N", "las": True}, "local_fraction",
                   0.51, "fraction"),
        PaperValue(_S, "clique_opt", {"topology": "2GPU", "buffer": "0.2N", "las": True}, "host_fraction",
                   0.13, "fraction"),
        PaperValue(_S, "clique_opt", {"topology": "4GPU", "buffer": "0.1N", "baseline": "naive"}, "local_gain",
                   0.72, "relative", "local accesses +72% vs Naive"),
        PaperValue(_S, "clique_opt", {"topology": "4GPU", "buffer": "0.1N", "baseline": "naive"}, "host_drop",
                   0.51, "relative", "CPU accesses -51% vs Naive"),
        PaperValue(_S, "clique_opt", {"topology": "4GPU", "buffer": "0.1N", "baseline": "metis"}, "local_gain",
                   0.13, "relative", "local accesses +13% vs METIS"),
        PaperValue(_S, "clique_opt", {"topology": "4GPU", "buffer": "0.1N", "baseline": "metis"}, "host_drop",
                   0.12, "relative", "CPU accesses -12% vs METIS"),
    )
