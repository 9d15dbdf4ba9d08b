"""Run the sampling CUDA kernels on the CPU (tests only): g++ + cuda_emu.h + ctypes.

``installed()`` makes impls.core.cuda launch kernels through this emulator, with "device"
pointers being host pointers of CPU tensors. Kernel signatures are read from the
preprocessed source; each kernel gets a C wrapper that unpacks a cuLaunchKernel-style
array of argument pointers. Built libraries are cached by content hash.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
HEADER = HERE / "cuda_emu.h"
SHARED = HERE.parent.parent / "impls" / "core" / "kernels"      # headers every kernel may include
CACHE = Path(os.environ.get("HARNESS_EMU_CACHE", Path(tempfile.gettempdir()) / "harness-cuda-emu"))
_LIBS: dict = {}


def available() -> str | None:
    """None when g++ builds the emulator (C++20: <barrier>, std::atomic_ref), else why not."""
    if shutil.which("g++") is None:
        return "g++ is not on PATH"
    from impls.sampling.gpu import KERNELS

    try:
        kernel(KERNELS / "unique.cu", "au_lookup")
    except RuntimeError as exc:
        return f"the CUDA emulator does not build here: {str(exc).splitlines()[1:2] or exc}"
    return None


def _signatures(source: Path) -> dict[str, list[str]]:
    pre = subprocess.run(["g++", "-E", "-P", "-x", "c++", f"-I{source.parent}", f"-I{SHARED}", str(source)],
                         capture_output=True, text=True, check=True).stdout
    out = {}
    for name, params in re.findall(r'extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(([^)]*)\)', pre):
        types = []
        for p in params.split(","):
            p = re.sub(r"__restrict__", "", p).strip()
            m = re.match(r"(.*?)(\w+)$", p)
            types.append(m.group(1).strip())
        out[name] = types
    return out


def _build(source: Path) -> tuple[ctypes.CDLL, dict]:
    sigs = _signatures(source)
    wrappers = []
    for name, types in sigs.items():
        args = ", ".join(f"*({t}*)a[{i}]" for i, t in enumerate(types))
        wrappers.append(f'extern "C" void emu_{name}(unsigned g, unsigned b, size_t sh, void** a) '
                        f'{{ emu::launch(g, b, sh, [&] {{ {name}({args}); }}); }}')
    text = (f'#include "{HEADER}"\n#include "{source}"\n' + "\n".join(wrappers) + "\n")
    deps = HEADER.read_bytes() + b"".join(p.read_bytes() for folder in (source.parent, SHARED)
                                          for p in sorted(folder.glob("*.cu*")))
    digest = hashlib.sha256(text.encode() + deps).hexdigest()[:16]
    CACHE.mkdir(parents=True, exist_ok=True)
    lib = CACHE / f"{source.stem}-{digest}.so"
    if not lib.exists():
        cpp = CACHE / f"{source.stem}-{digest}.cpp"
        cpp.write_text(text)
        tmp = lib.with_suffix(f".{os.getpid()}.tmp")
        proc = subprocess.run(["g++", "-std=c++20", "-O1", "-g0", "-shared", "-fPIC", "-pthread",
                               "-w", f"-I{source.parent}", f"-I{SHARED}", "-o", str(tmp), str(cpp)],
                              capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError(f"emulator build of {source.name} failed:\n{proc.stderr[-4000:]}")
        os.replace(tmp, lib)
    return ctypes.CDLL(str(lib)), sigs


_CTYPES = {"long long": ctypes.c_int64, "int": ctypes.c_int32, "u64": ctypes.c_uint64,
           "unsigned long long": ctypes.c_uint64, "u32": ctypes.c_uint32, "unsigned": ctypes.c_uint32}


class EmuKernel:
    def __init__(self, lib, name: str, types: list[str]):
        self.fn = getattr(lib, f"emu_{name}")
        self.fn.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
        self.name, self.types = name, types

    def __call__(self, grid, block, args, shared_mem: int = 0):
        grid = grid[0] if isinstance(grid, tuple) else grid
        block = block[0] if isinstance(block, tuple) else block
        if len(args) != len(self.types):
            raise TypeError(f"{self.name}: {len(args)} arguments for {len(self.types)} parameters")
        holders = []
        for t, a in zip(self.types, args):
            if "*" in t:
                holders.append(ctypes.c_uint64(int(a)))
            else:
                ct = _CTYPES[t.replace("const", "").strip()]
                if not isinstance(a, np.generic) or ctypes.sizeof(ct) != a.dtype.itemsize:
                    raise TypeError(f"{self.name}: parameter of type {t} given {type(a).__name__} "
                                    f"{getattr(a, 'dtype', '')} (CuPy needs the exact width)")
                holders.append(ct(int(a)))
        ptrs = (ctypes.c_void_p * len(holders))(*[ctypes.cast(ctypes.pointer(h), ctypes.c_void_p) for h in holders])
        self.fn(int(grid), int(block), int(shared_mem), ptrs)


def kernel(source: Path, name: str) -> EmuKernel:
    key = str(source)
    if key not in _LIBS:
        _LIBS[key] = _build(Path(source))
    lib, sigs = _LIBS[key]
    if name not in sigs:
        raise KeyError(f"{name} is not a kernel of {source}")
    return EmuKernel(lib, name, sigs[name])


@contextlib.contextmanager
def installed():
    """Within the block, impls.core.cuda launches through the emulator."""
    from impls.core import cuda

    previous = cuda.set_emulator(kernel)
    try:
        yield
    finally:
        cuda.set_emulator(previous)
