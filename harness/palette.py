"""One palette: a colour per system, the same in every figure (the report kit's ``PALETTE`` and
``colour``; an implementation's registry entry takes its family's), and one :class:`Palette` per
paper for its series that are no system (stages, policies, memory categories, access paths): the
only colour tables of the project (tests/test_figures.py keeps experiments free of their own)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

PALETTE = {"ours": "#1f77b4", "WholeGraph": "#2ca02c", "PyG": "#d62728", "DGL+C": "#9467bd", "DGL": "#8c564b",
           "XGNN": "#ff7f0e", "Quiver": "#e377c2", "MG-GCN": "#17becf", "CAGNET": "#bcbd22", "GNNLab": "#7f7f7f",
           "NCCL": "#8c6d31", "host memory": "#a55194", "PaGraph": "#7b4173"}


def colour(label: str) -> str | None:
    """The palette's colour of the system a series label names (the longest name it contains,
    so 'DGL+C (re-impl.)' is DGL+C, not DGL), or None."""
    hits = [name for name in PALETTE if name.lower() in str(label).lower()]
    return PALETTE[max(hits, key=len)] if hits else None


@dataclass(frozen=True)
class Palette:
    """A paper's colours: its own series by exact name (``own``), and any system by the systems'
    palette (:func:`colour`), so that a figure asks one palette for every series it draws."""

    paper: str
    own: Mapping[str, str] = field(default_factory=dict)

    def get(self, name: str, default: str | None = None) -> str | None:
        """The colour of ``name``: the paper's own, else its system's, else ``default``."""
        return self.own.get(name) or colour(name) or default

    def __getitem__(self, name: str) -> str:
        found = self.get(name)
        if found is None:
            raise KeyError(f"{name!r} has no colour in {self.paper}'s palette nor the systems'")
        return found

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None
