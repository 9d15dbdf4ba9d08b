"""One palette: a colour per system, the same in every figure (the report kit's ``PALETTE`` and
``colour``; an implementation's registry entry takes its family's)."""

from __future__ import annotations

PALETTE = {"ours": "#1f77b4", "WholeGraph": "#2ca02c", "PyG": "#d62728", "DGL+C": "#9467bd", "DGL": "#8c564b",
           "XGNN": "#ff7f0e", "Quiver": "#e377c2", "MG-GCN": "#17becf", "CAGNET": "#bcbd22", "GNNLab": "#7f7f7f",
           "NCCL": "#8c6d31", "host memory": "#a55194", "PaGraph": "#7b4173"}


def colour(label: str) -> str | None:
    """The palette's colour of the system a series label names (the longest name it contains,
    so 'DGL+C (re-impl.)' is DGL+C, not DGL), or None."""
    hits = [name for name in PALETTE if name.lower() in str(label).lower()]
    return PALETTE[max(hits, key=len)] if hits else None
