"""ICS'22 Fig. 12: training losses on mag240m with and without locality-aware sampling (training.py)."""

from __future__ import annotations

from harness.registry import register_experiment

from .training import LossExperiment


@register_experiment
class Fig12(LossExperiment):
    dataset = "mag240m"
    quick_scale, full_scale = 0.0005, 0.002
    paper_accuracy = ("Sec. 5.3", 0.688, 0.002)
    pagraph = False      # Sec. 5.3: PaGraph cannot partition MAG240M in five hours; Fig. 12 has no PG curve
