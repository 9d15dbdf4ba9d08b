"""ICS'22 Fig. 7: training losses on reddit with and without locality-aware sampling.

See training.py: a 3-layer GraphSAGE-mean trained data-parallel over the simulated GPUs ('2GPU'
and '(2+2)GPU', where the paper applies LAS), Our placement with and without LAS, and PaGraph's
local shuffling. The paper gives curves and the test accuracy of the LAS-trained model.
"""

from __future__ import annotations

from harness.experiment import PaperValue
from harness.registry import register_experiment

from .training import LossExperiment


@register_experiment
class Fig7(LossExperiment):
    title = "ICS'22 Fig. 7: training losses on reddit with and without LAS"
    dataset = "reddit"
    quick_scale, full_scale = 0.02, 0.1
    figure_caption = "ICS'22 Fig. 7 (reddit)."
    paper_values = (
        PaperValue("Sec. 5.2 (Fig. 7)", "clique_opt", {"las": True}, "test_accuracy", 0.964, "", "(+/- 0.001)"),
    )
