"""The fused tier kernels (impls/storage/kernels/tiers.cu) against their torch reference, run
on the CPU through the CUDA emulator: physical row indices and per-tier access/byte counts."""

from __future__ import annotations

import pytest
import torch

from impls.storage.tiered import TierCounters
from impls.storage.tiers import clique_layout, ggms_layout, host_layout, replicated_layout
from tests.sampling import emu

if emu.available():
    pytest.skip(emu.available(), allow_module_level=True)

LAYOUTS = {
    "ggms half on GPUs": lambda: ggms_layout(1000, 500, 4),
    "ggms all on GPUs": lambda: ggms_layout(1000, 1000, 3),
    "replicated": lambda: replicated_layout(1000, 300, 2),
    "clique": lambda: clique_layout(1000, 640, [[0, 1], [2, 3]]),
    "host only": lambda: host_layout(1000, 2),
}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_kernels_equal_torch(name):
    layout = LAYOUTS[name]()
    gen = torch.Generator().manual_seed(5)
    ids = torch.randint(0, 1000, (3000,), generator=gen)          # > one grid of 4 x 8 blocks of 256
    degrees = torch.randint(0, 9, (ids.numel(),), generator=gen)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(degrees, 0)])
    for worker in range(layout.num_gpus):
        reference = layout.physical_reference(ids, worker)
        expected = TierCounters("cpu")
        expected.add("features", layout.tier_of_physical(reference, worker), 64)
        expected.add("topology", layout.tier_of_physical(reference, worker), 16 + degrees * 4)
        with emu.installed():
            index = layout.physical(ids, worker)
            counted = TierCounters("cpu")
            counted.add_rows("features", layout, index, worker, 64)
            counted.add_rows("topology", layout, index, worker, 16, offsets, 4)
            counted.add_rows("topology", layout, index[:0], worker, 16)           # empty: no launch
            assert layout.physical(ids[:0], worker).numel() == 0
        assert torch.equal(index, reference), f"{name}, worker {worker}"
        assert torch.equal(counted.accesses, expected.accesses) and torch.equal(counted.bytes, expected.bytes)
        assert int(counted.accesses.sum()) == 2 * ids.numel()
