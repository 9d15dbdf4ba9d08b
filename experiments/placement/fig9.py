"""ICS'22 Fig. 9: training losses on products with and without locality-aware sampling.

See training.py: a 3-layer GraphSAGE-mean trained data-parallel over the simulated GPUs ('2GPU'
and '(2+2)GPU', where the paper applies LAS), Our placement with and without LAS, and PaGraph's
local shuffling. The paper gives curves and the test accuracy of the LAS-trained model.
"""

from __future__ import annotations

from harness.experiment import PaperValue
from harness.registry import register_experiment

from .training import LossExperiment


@register_experiment
class Fig9(LossExperiment):
    title = "ICS'22 Fig. 9: training losses on products with and without LAS"
    dataset = "products"
    quick_scale, full_scale = 0.004, 0.02
    figure_caption = "ICS'22 Fig. 9 (products)."
    paper_values = (
        PaperValue("Sec. 5.2 (Fig. 9)", "clique_opt", {"las": True}, "test_accuracy", 0.787, "", "(+/- 0.001)"),
    )
