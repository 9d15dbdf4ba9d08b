"""MG-GCN's buffer plan (Sec. 4.2, Figs. 1 and 4): L + 3 dense buffers shared by layers and passes.

Every intermediate of the forward and backward pass has a *role*; ``Arena.tensor(role, layer,
rows, width)`` hands out the memory for it.  With ``reuse=True`` the roles map onto the paper's
buffers (Eqs. 16-21):

=============  ==============================================  ==================================
buffer         holds                                           width (columns)
=============  ==============================================  ==================================
``out[l]``     layer l's AHW, then H' = sigma(AHW) in place    max(d(l+1), d(l)) for l > 0
               (16-18); in backward AHW_G (19) and, once the   (d(l) for H_G, Eq. 21); d(l+1)
               SpMM has consumed it, H_G (21)                  for l = 0 (no H_G)
               + for an SpMM-first layer that is not the       + d(l)
               last: its aggregated input AH = F H
``HW``         HW (16) / HW_G (20) of the running layer; AH    max_l min(d(l), d(l+1))
               of an SpMM-first last layer; G_AH
``BC1, BC2``   the H tile received at a stage, double-buffered max_l min(d(l), d(l+1)),
               so stage j+1's broadcast overlaps stage j       rows of the largest part
=============  ==============================================  ==================================

That is L + 3 buffers (L + 1 on one rank: nothing is broadcast).  MG-GCN's own code keeps AH of
an SpMM-first layer in the shared HW buffer, which later layers overwrite, and then forms the
weight gradient from H instead of AH; that is not the gradient of the model, so here a layer
that aggregates first and is not the last keeps AH beside its output (a wider ``out[l]``, not
an extra buffer).  For the last layer nothing runs between its forward and its backward, so AH
can stay in HW.

The buffers are regions of one flat allocation, each starting on a 256-byte boundary, laid out
from the plan alone: ranks whose plans agree (``rows`` set to the largest part's rows everywhere)
place every role at the same offset, so a rank finds a peer's copy of its own view at the same
offset of the peer's allocation (the peer-copy transport of staged.py reads them there).

With ``reuse=False`` every role gets a fresh allocation that is kept until the epoch ends, as
a framework that allocates each operator's output (and a tape that keeps them) would, and every
stage of an SpMM receives into a new tile freed when that SpMM ends: the "naive" implementation
the memory comparison measures against.  Both modes run the same
arithmetic in the same order, so their results are identical.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import SPMM_FIRST, orders

FLOAT_BYTES = 4
# a region that starts inside a buffer starts on a 256-byte boundary: cuSPARSE and cuBLAS want
# aligned dense operands, and torch copies a misaligned one to a temporary first
ALIGN_ELEMENTS = 64


def _align(elements: int) -> int:
    return -(-elements // ALIGN_ELEMENTS) * ALIGN_ELEMENTS


@dataclass(frozen=True)
class BufferPlan:
    dims: tuple[int, ...]
    rows: int            # this rank's rows
    rows_max: int        # the largest part's rows (a received tile can be that tall)
    world: int

    @property
    def layers(self) -> int:
        return len(self.dims) - 1

    def layer_orders(self) -> list[str]:
        return orders(list(self.dims))

    def keeps_aggregate(self, layer: int) -> bool:
        """True when layer's AH must outlive later layers' forward (SpMM first, not last)."""
        return self.layer_orders()[layer] == SPMM_FIRST and layer < self.layers - 1

    def out_main_width(self, layer: int) -> int:
        d_in, d_out = self.dims[layer], self.dims[layer + 1]
        return d_out if layer == 0 else max(d_in, d_out)

    def out_width(self, layer: int) -> int:
        extra = self.dims[layer] if self.keeps_aggregate(layer) else 0
        return self.out_main_width(layer) + extra

    def aggregate_offset(self, layer: int) -> int:
        """Where AH starts in ``out[layer]`` (after the output region, aligned)."""
        return _align(self.rows * self.out_main_width(layer))

    def out_elements(self, layer: int) -> int:
        if not self.keeps_aggregate(layer):
            return self.rows * self.out_main_width(layer)
        return self.aggregate_offset(layer) + self.rows * self.dims[layer]

    @property
    def shared_width(self) -> int:
        return max(min(a, b) for a, b in zip(self.dims[:-1], self.dims[1:]))

    def sizes(self) -> dict[str, int]:
        """Elements of every buffer, by name."""
        sizes = {f"out{l}": self.out_elements(l) for l in range(self.layers)}
        sizes["HW"] = self.rows * self.shared_width
        if self.world > 1:
            sizes["BC1"] = self.rows_max * self.shared_width
            sizes["BC2"] = self.rows_max * self.shared_width
        return sizes

    def layout(self) -> tuple[dict[str, int], int]:
        """(offset of every buffer in the flat allocation, elements of the allocation)."""
        offsets, end = {}, 0
        for name, numel in self.sizes().items():
            offsets[name] = end
            end = _align(end + numel)
        return offsets, max(end, 1)

    @property
    def count(self) -> int:
        return len(self.sizes())

    @property
    def total_bytes(self) -> int:
        return FLOAT_BYTES * sum(self.sizes().values())


# which buffer a role lives in when buffers are reused (see the module docstring)
_OUT_MAIN_ROLES = {"AHW", "H", "AHW_G", "H_G", "logits_G"}
_SHARED_ROLES = {"HW", "HW_G", "G_AH"}


class Arena:
    """Hands out the tensor for each role: views of the planned buffers, or fresh allocations."""

    def __init__(self, plan: BufferPlan, device, reuse: bool = True, allocate=None):
        """``allocate(elements) -> flat float32 tensor``: where the buffers live (default
        torch.empty on ``device``; the peer-copy transport passes memory every rank maps)."""
        import torch

        self.plan = plan
        self.reuse = reuse
        self.device = device
        self._torch = torch
        self.buffers: dict[str, object] = {}
        self.flat = None
        self._live_bytes = 0
        self.peak_bytes = 0
        self._fresh: list[object] = []
        if reuse:
            offsets, total = plan.layout()
            self.flat = (allocate(total) if allocate is not None
                         else torch.empty(total, dtype=torch.float32, device=device))
            for name, numel in plan.sizes().items():
                self.buffers[name] = self.flat[offsets[name]:offsets[name] + numel]
            self._live_bytes = self.peak_bytes = plan.total_bytes
        elif allocate is not None:
            raise ValueError("fresh allocations per role cannot live in a given allocation")

    def tensor(self, role: str, layer: int, rows: int, width: int):
        """A contiguous rows x width float32 tensor for ``role`` of ``layer``."""
        if not self.reuse:
            t = self._torch.empty(rows, width, dtype=self._torch.float32, device=self.device)
            self._fresh.append(t)
            self._live_bytes += t.numel() * FLOAT_BYTES
            self.peak_bytes = max(self.peak_bytes, self._live_bytes)
            return t
        if role in _OUT_MAIN_ROLES:
            return self._view(f"out{layer}", 0, rows, width)
        if role == "AH":
            if self.plan.keeps_aggregate(layer):
                return self._view(f"out{layer}", self.plan.aggregate_offset(layer), rows, width)
            return self._view("HW", 0, rows, width)
        if role in _SHARED_ROLES:
            return self._view("HW", 0, rows, width)
        if role in ("BC1", "BC2"):
            return self._view(role, 0, rows, width)
        raise KeyError(f"unknown buffer role '{role}'")

    def _view(self, name: str, offset: int, rows: int, width: int):
        flat = self.buffers[name]
        end = offset + rows * width
        if end > flat.numel():
            raise RuntimeError(f"buffer {name} holds {flat.numel()} elements, role needs {end}")
        return flat[offset:end].view(rows, width)

    def release(self, tensors) -> None:
        """Fresh allocations that are dead before the epoch ends (a stage's receive buffers)."""
        if not self.reuse:
            dead = {t.data_ptr() for t in tensors}
            kept = [t for t in self._fresh if t.data_ptr() not in dead]
            self._live_bytes -= FLOAT_BYTES * sum(t.numel() for t in self._fresh if t.data_ptr() in dead)
            self._fresh = kept

    def end_epoch(self) -> None:
        """Fresh allocations die with the epoch (reused buffers live on)."""
        if not self.reuse:
            self._fresh.clear()
            self._live_bytes = 0
