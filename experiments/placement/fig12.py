"""ICS'22 Fig. 12: training losses on mag240m with and without locality-aware sampling.

See training.py: a 3-layer GraphSAGE-mean trained data-parallel over the simulated GPUs ('2GPU'
and '(2+2)GPU', where the paper applies LAS), Our placement with and without LAS, and PaGraph's
local shuffling. The paper gives curves and the test accuracy of the LAS-trained model.
"""

from __future__ import annotations

from harness.experiment import PaperValue
from harness.registry import register_experiment

from .training import LossExperiment


@register_experiment
class Fig12(LossExperiment):
    title = "ICS'22 Fig. 12: training losses on mag240m with and without LAS"
    dataset = "mag240m"
    quick_scale, full_scale = 0.0005, 0.002
    figure_caption = "ICS'22 Fig. 12 (mag240m)."
    paper_values = (
        PaperValue("Sec. 5.3 (Fig. 12)", "clique_opt", {"las": True}, "test_accuracy", 0.688, "", "(+/- 0.002)"),
    )
