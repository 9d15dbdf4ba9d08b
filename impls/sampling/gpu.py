"""Host side of kernels/*.cu: compile with CuPy (NVRTC), launch on torch's current stream.

``launch(device, source, name, grid, block, args, shared_mem)`` launches kernel ``name`` of
``kernels/<source>`` with CuPy-style arguments (NumPy scalars of the exact width, pointers
as ``np.uint64``). Tests swap in a CPU emulator with ``set_emulator`` (tests/sampling/emu.py),
so the same host code runs on CPU tensors there.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import torch

KERNELS = Path(__file__).with_name("kernels")
_modules: dict = {}
_functions: dict = {}
_streams: dict = {}
_emulator = None
_sm_count: dict = {}


def set_emulator(factory):
    """Install ``factory(source_path, name) -> callable(grid, block, args, shared_mem)``;
    returns the previous one (None: real CuPy kernels)."""
    global _emulator
    previous, _emulator = _emulator, factory
    return previous


def emulated() -> bool:
    return _emulator is not None


def source_text(source: str) -> str:
    """The kernel source with local ``#include "x"`` lines inlined (NVRTC has no file path)."""
    text = (KERNELS / source).read_text()

    def inline(match):
        return (KERNELS / match.group(1)).read_text()

    return re.sub(r'^#include "([^"]+)"\s*$', inline, text, flags=re.M)


def _function(source: str, name: str, device_index: int):
    key = (source, name, device_index)
    fn = _functions.get(key)
    if fn is None:
        import cupy as cp

        mkey = (source, device_index)
        if mkey not in _modules:
            with cp.cuda.Device(device_index):
                _modules[mkey] = cp.RawModule(code=source_text(source), options=("-std=c++17",))
        fn = _functions[key] = _modules[mkey].get_function(name)
    return fn


def _stream(index: int):
    """CuPy's view of torch's current stream on device ``index`` (cached per stream). torch's raw
    stream query costs a fraction of ``torch.cuda.current_stream`` on the launch path."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    handle = raw(index) if raw is not None else torch.cuda.current_stream(index).cuda_stream
    stream = _streams.get((handle, index))
    if stream is None:
        import cupy as cp

        stream = _streams[(handle, index)] = cp.cuda.ExternalStream(handle, index)
    return stream


def ptr(t: torch.Tensor | None) -> np.uint64:
    return np.uint64(0 if t is None else t.data_ptr())


def sm_count(device: torch.device) -> int:
    if device.type != "cuda":
        return 4
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _sm_count:
        _sm_count[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _sm_count[index]


def grid_for(device: torch.device, n: int, block: int = 256, waves: int = 8) -> int:
    """Blocks for a grid-stride loop over ``n`` items: enough to cover them, at most ``waves``
    per SM."""
    return min(-(-max(n, 1) // block), sm_count(device) * waves)


def launch(device: torch.device, source: str, name: str, grid: int, block: int, args: tuple,
           shared_mem: int = 0) -> None:
    grid = max(1, int(grid))
    if _emulator is not None:
        _emulator(KERNELS / source, name)(grid, block, args, shared_mem=shared_mem)
        return
    current = torch.cuda.current_device()
    index = device.index if device.index is not None else current
    fn = _function(source, name, index)
    if index == current:       # the launch path of every sampling hop: no context switches
        fn((grid,), (int(block),), args, shared_mem=int(shared_mem), stream=_stream(index))
        return
    import cupy as cp

    with cp.cuda.Device(index):
        fn((grid,), (int(block),), args, shared_mem=int(shared_mem), stream=_stream(index))


def kernel_device_ok(device: torch.device) -> bool:
    """True where the kernels can run: a CUDA device, or any device under the emulator."""
    return _emulator is not None or device.type == "cuda"
