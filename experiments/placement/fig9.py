"""ICS'22 Fig. 9: training losses on products with and without locality-aware sampling (training.py)."""

from __future__ import annotations

from harness.registry import register_experiment

from .training import LossExperiment


@register_experiment
class Fig9(LossExperiment):
    dataset = "products"
    quick_scale, full_scale = 0.004, 0.02
    paper_accuracy = ("Sec. 5.2", 0.787, 0.001)
