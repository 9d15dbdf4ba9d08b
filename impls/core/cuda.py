"""The one host-side path of every CUDA kernel: compile with CuPy (NVRTC), launch on torch's stream.

``launch(device, source, name, grid, block, args, shared_mem, options)`` launches kernel ``name``
of the ``.cu`` file ``source`` (a path) with CuPy-style arguments (NumPy scalars of the exact
width, pointers as ``np.uint64``: :func:`ptr`), on torch's current stream of ``device``. A module
is compiled once per (source, options, device) and its functions cached; local ``#include "x"``
lines are inlined from the source's folder, else from ``impls/core/kernels`` (shared headers such
as ``common.cuh``), since NVRTC has no file path.

The launch path is the hot path of every sampling hop and gather: on the current device it calls
the cached function straight away, with CuPy's view of torch's raw stream (cached per stream),
and enters no CuPy device or stream context. :class:`KernelDir` binds an interface's ``kernels/``
folder (``KernelDir(folder).launch(device, "sampling.cu", ...)``).

Tests swap in a CPU emulator with :func:`set_emulator` (tests/sampling/emu.py), so the same host
code runs on CPU tensors there.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import torch

SHARED = Path(__file__).with_name("kernels")          # headers every interface's kernels may include
_modules: dict = {}
_functions: dict = {}
_streams: dict = {}
_sm_count: dict = {}
_capability: dict = {}
_emulator = None


def set_emulator(factory):
    """Install ``factory(source_path, name) -> callable(grid, block, args, shared_mem)``;
    returns the previous one (None: real CuPy kernels)."""
    global _emulator
    previous, _emulator = _emulator, factory
    return previous


def emulated() -> bool:
    return _emulator is not None


def source_text(source: Path) -> str:
    """The kernel source with local ``#include "x"`` lines inlined (from its folder, else
    :data:`SHARED`), as NVRTC compiles it."""
    source = Path(source)

    def inline(match):
        name = match.group(1)
        path = source.parent / name
        return (path if path.exists() else SHARED / name).read_text()

    return re.sub(r'^#include "([^"]+)"\s*$', inline, source.read_text(), flags=re.M)


def _function(source: Path, name: str, device_index: int, options: tuple[str, ...] = ()):
    key = (source, name, device_index, options)
    fn = _functions.get(key)
    if fn is None:
        import cupy as cp

        mkey = (source, device_index, options)
        if mkey not in _modules:
            with cp.cuda.Device(device_index):
                _modules[mkey] = cp.RawModule(code=source_text(source), options=("-std=c++17",) + tuple(options))
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


def sm_count(device) -> int:
    """Multiprocessors of a CUDA device (a torch.device or an index); 4 for a CPU device."""
    if isinstance(device, torch.device) and device.type != "cuda":
        return 4
    if isinstance(device, int):
        index = device
    else:
        index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _sm_count:
        _sm_count[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _sm_count[index]


def compute_capability(device) -> tuple[int, int]:
    """(major, minor) of a CUDA device (a torch.device or an index), looked up once."""
    index = device if isinstance(device, int) else (device.index if device.index is not None
                                                    else torch.cuda.current_device())
    if index not in _capability:
        _capability[index] = tuple(torch.cuda.get_device_capability(index))
    return _capability[index]


def grid_for(device, n: int, block: int = 256, waves: int = 8) -> int:
    """Blocks for a grid-stride loop over ``n`` items: enough to cover them, at most ``waves``
    per SM."""
    return min(-(-max(n, 1) // block), sm_count(device) * waves)


def launch(device, source: Path, name: str, grid: int, block: int, args: tuple, shared_mem: int = 0,
           options: tuple[str, ...] = ()) -> None:
    """Kernel ``name`` of ``source`` on ``device`` (a torch.device or a CUDA index), a 1-D grid of
    ``grid`` blocks of ``block`` threads."""
    grid = max(1, int(grid))
    if _emulator is not None:
        _emulator(source, name)(grid, block, args, shared_mem=shared_mem)
        return
    current = torch.cuda.current_device()
    index = device if isinstance(device, int) else (device.index if device.index is not None else current)
    fn = _functions.get((source, name, index, options)) or _function(source, name, index, options)
    if index == current:       # the launch path of every sampling hop and gather: no context switches
        fn((grid,), (int(block),), args, shared_mem=int(shared_mem), stream=_stream(index))
        return
    import cupy as cp

    with cp.cuda.Device(index):
        fn((grid,), (int(block),), args, shared_mem=int(shared_mem), stream=_stream(index))


def kernel_device_ok(device: torch.device) -> bool:
    """True where the kernels can run: a CUDA device, or any device under the emulator."""
    return _emulator is not None or device.type == "cuda"


class KernelDir:
    """An interface's ``kernels/`` folder: ``launch`` and ``source_text`` by file name."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self._paths: dict[str, Path] = {}

    def __truediv__(self, source: str) -> Path:
        path = self._paths.get(source)
        if path is None:
            path = self._paths[source] = self.directory / source
        return path

    def source_text(self, source: str) -> str:
        return source_text(self / source)

    def launch(self, device, source: str, name: str, grid: int, block: int, args: tuple, shared_mem: int = 0,
               options: tuple[str, ...] = ()) -> None:
        launch(device, self._paths.get(source) or self / source, name, grid, block, args, shared_mem, options)
