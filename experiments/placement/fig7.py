"""ICS'22 Fig. 7: training losses on reddit with and without locality-aware sampling (training.py)."""

from __future__ import annotations

from harness.registry import register_experiment

from .training import LossExperiment


@register_experiment
class Fig7(LossExperiment):
    dataset = "reddit"
    quick_scale, full_scale = 0.02, 0.1
    paper_accuracy = ("Sec. 5.2", 0.964, 0.001)
