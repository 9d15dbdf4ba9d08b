"""What an implementation needs, and whether this machine has it.

An implementation declares ``Needs``; the runner asks ``Needs.unmet(caps, device,
world_size)`` and records a skipped row with the returned reason instead of failing.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Capabilities:
    """A snapshot of what this machine offers, taken once per process."""

    cuda: bool
    gpu_count: int
    gpu_names: tuple[str, ...] = ()
    packages: dict[str, str | None] = field(default_factory=dict)  # import name -> why not importable
    peer_access: bool | None = None  # every pair of GPUs can access each other
    gpu_memory: tuple[int, ...] = ()  # bytes of each visible GPU
    host_memory: int | None = None    # bytes of host memory (None: unknown)

    def package_missing(self, name: str, imported: bool = True) -> str | None:
        """Why package ``name`` cannot be used here, or None; ``imported=False``: whether it is
        installed only, without importing it (DGL alone takes seconds)."""
        if name in self.packages:
            return self.packages[name]
        return _import_problem(name) if imported else _install_problem(name)


# Packages that implementations may need; probed lazily and cached.
OPTIONAL_PACKAGES = (
    "cupy", "triton", "torch_geometric", "torch_sparse", "pyg_lib", "dgl",
    "pylibwholegraph", "ogb", "pymetis", "pynvml", "numba",
)


def _install_problem(name: str) -> str | None:
    return f"package '{name}' is not installed" if importlib.util.find_spec(name) is None else None


@functools.lru_cache(maxsize=None)
def _import_problem(name: str) -> str | None:
    """None when ``name`` imports; otherwise one line saying why not."""
    if importlib.util.find_spec(name) is None:
        return f"package '{name}' is not installed"
    try:
        if name == "dgl":                 # DGL 2.x imports under newer torch only through the shim
            from .dgl_compat import import_dgl

            import_dgl()
        else:
            importlib.import_module(name)
    except Exception as exc:  # a broken install is a reason, not a crash
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"package '{name}' does not import: {first[:160]}"
    return None


@functools.lru_cache(maxsize=1)
def detect() -> Capabilities:
    import torch

    cuda = torch.cuda.is_available()
    count = torch.cuda.device_count() if cuda else 0
    names = tuple(torch.cuda.get_device_name(i) for i in range(count))
    peer = None
    if count > 1:
        peer = all(
            torch.cuda.can_device_access_peer(i, j)
            for i in range(count) for j in range(count) if i != j
        )
    memory = tuple(int(torch.cuda.get_device_properties(i).total_memory) for i in range(count))
    return Capabilities(cuda=cuda, gpu_count=count, gpu_names=names, peer_access=peer, gpu_memory=memory,
                        host_memory=_host_memory())


def _host_memory() -> int | None:
    try:
        import psutil

        return int(psutil.virtual_memory().total)
    except Exception:        # an unknown size checks nothing
        return None


def memory_unmet(need: dict | None, caps: Capabilities, device: str, world_size: int) -> str | None:
    """Why a point needing ``need`` bytes ({"gpu": per GPU, "host": in host memory}, as
    ``Experiment.memory_need`` says) cannot fit this machine, or None. On CPU ranks what a GPU would
    hold lives in host memory too, once per rank."""
    if not need:
        return None
    gpu, host = float(need.get("gpu") or 0), float(need.get("host") or 0)
    if device == "cuda" and gpu and caps.gpu_memory and gpu > min(caps.gpu_memory):
        return f"needs {_gib(gpu)} per GPU, more than the {_gib(min(caps.gpu_memory))} of a GPU here"
    in_host = host + (gpu * world_size if device == "cpu" else 0.0)
    if in_host and caps.host_memory and in_host > caps.host_memory:
        return f"needs {_gib(in_host)} of host memory, more than the {_gib(caps.host_memory)} of this host"
    return None


def _gib(n: float) -> str:
    return f"{n / 2**30:,.3g} GiB" if n < 1000 * 2**30 else f"{n / 2**30:,.0f} GiB"


@dataclass(frozen=True)
class Needs:
    """Requirements of one implementation (all must hold)."""

    devices: tuple[str, ...] = ("cpu", "cuda")  # device kinds it supports
    min_gpus: int = 0                  # GPUs visible on this node
    min_world_size: int = 1            # ranks the run uses
    packages: tuple[str, ...] = ()     # import names, on every device
    cuda_packages: tuple[str, ...] = ()  # import names needed only with --device cuda
    peer_access: bool = False          # all GPU pairs peer-accessible
    note: str = ""                     # free text shown by `list`

    def describe(self) -> str:
        parts = ["/".join(self.devices)]
        if self.min_gpus:
            parts.append(f">={self.min_gpus} GPUs")
        if self.min_world_size > 1:
            parts.append(f">={self.min_world_size} ranks")
        if self.peer_access:
            parts.append("P2P")
        parts.extend(self.packages)
        parts.extend(f"{p} (cuda)" for p in self.cuda_packages)
        if self.note:
            parts.append(self.note)
        return ", ".join(parts)

    def unmet(self, caps: Capabilities, device: str | None = None,
              world_size: int | None = None, imported: bool = True) -> str | None:
        """Why this cannot run here with this device/world size, or None (``imported=False``:
        packages checked for being installed, not imported)."""
        if device is not None and device not in self.devices:
            return f"runs on {'/'.join(self.devices)} only, not on {device}"
        wants_cuda = device == "cuda" or (device is None and self.devices == ("cuda",))
        if wants_cuda and not caps.cuda:
            return "needs CUDA, and no CUDA GPU is visible"
        if self.min_gpus and caps.gpu_count < self.min_gpus:
            return f"needs >= {self.min_gpus} GPUs, {caps.gpu_count} visible"
        if world_size is not None and world_size < self.min_world_size:
            return f"needs >= {self.min_world_size} ranks, run has {world_size}"
        if self.peer_access and caps.gpu_count > 1 and caps.peer_access is False:
            return "needs peer access between every pair of GPUs"
        for pkg in self.packages + (self.cuda_packages if wants_cuda else ()):
            problem = caps.package_missing(pkg, imported)
            if problem:
                return problem
        return None


def default_device() -> str:
    forced = os.environ.get("HARNESS_DEVICE")
    if forced:
        return forced
    return "cuda" if detect().cuda else "cpu"
