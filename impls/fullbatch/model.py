"""The GCN model every full-batch implementation trains, and MG-GCN's GeMM/SpMM order rule.

Layer l maps d(l) -> d(l+1): ``H' = sigma(F (H W))`` with F = Â^T, ReLU on every layer but the last
(whose output are the logits of a softmax cross-entropy over the training vertices), no bias
(MG-GCN Eq. 1), Glorot-uniform weights drawn from a seeded generator so every rank and every
implementation starts from the same W.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

GEMM_FIRST = "gemm_first"   # HW = H W, then F (HW): the SpMM runs on d(l+1) columns
SPMM_FIRST = "spmm_first"   # AH = F H, then (AH) W: the SpMM runs on d(l) columns


def layer_order(d_in: int, d_out: int) -> str:
    """MG-GCN Sec. 4.4: if d(l) < d(l+1) do the SpMM first, otherwise the GeMM first.

    By associativity F (H W) = (F H) W; the SpMM dominates, so it should run on the narrower of
    the two matrices.  Ties go to GeMM first (MG-GCN's code compares min(d_in, d_out) == d_out).
    """
    return SPMM_FIRST if d_in < d_out else GEMM_FIRST


@dataclass(frozen=True)
class ModelConfig:
    """``layers`` GCN layers with ``hidden`` units each (the paper names models "2 x 16", "3 x 256").

    ``hidden_sizes`` gives every hidden layer its own width instead (then ``layers`` must be
    ``len(hidden_sizes) + 1``); the paper's models are uniform, the engine is not limited to them.
    """

    layers: int
    hidden: int
    lr: float = 0.01
    hidden_sizes: tuple[int, ...] = ()

    def __post_init__(self):
        if self.layers < 1 or self.hidden < 1:
            raise ValueError("a GCN needs >= 1 layer and >= 1 hidden unit")
        if self.hidden_sizes and (len(self.hidden_sizes) != self.layers - 1 or min(self.hidden_sizes) < 1):
            raise ValueError("hidden_sizes needs one positive width per hidden layer (layers - 1)")

    @property
    def label(self) -> str:
        if self.hidden_sizes:
            return "-".join(str(h) for h in self.hidden_sizes)
        return f"{self.layers}x{self.hidden}"

    def dims(self, in_features: int, classes: int) -> list[int]:
        hidden = list(self.hidden_sizes) or [self.hidden] * (self.layers - 1)
        return [in_features] + hidden + [classes]

    @classmethod
    def parse(cls, text: str, lr: float = 0.01) -> "ModelConfig":
        match = re.fullmatch(r"\s*(\d+)\s*x\s*(\d+)\s*", text)
        if not match:
            raise ValueError(f"model must look like LAYERSxHIDDEN (e.g. 3x256), got '{text}'")
        return cls(int(match.group(1)), int(match.group(2)), lr)


def orders(dims: list[int]) -> list[str]:
    return [layer_order(dims[l], dims[l + 1]) for l in range(len(dims) - 1)]


def init_weights(dims: list[int], seed: int, device=None) -> list:
    """Glorot-uniform W(l) of shape d(l) x d(l+1), identical for a given seed on every rank."""
    import torch

    gen = torch.Generator().manual_seed(int(seed) * 1000003 + 17)
    weights = []
    for d_in, d_out in zip(dims[:-1], dims[1:]):
        bound = math.sqrt(6.0 / (d_in + d_out))
        w = (torch.rand(d_in, d_out, generator=gen, dtype=torch.float32) * 2 - 1) * bound
        weights.append(w.to(device) if device is not None else w)
    return weights

