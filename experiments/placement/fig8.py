"""ICS'22 Fig. 8: training losses on yelp with and without locality-aware sampling (training.py)."""

from __future__ import annotations

from harness.registry import register_experiment

from .training import LossExperiment


@register_experiment
class Fig8(LossExperiment):
    dataset = "yelp"
    quick_scale, full_scale = 0.01, 0.05
    paper_accuracy = ("Sec. 5.2", 0.642, 0.003)
