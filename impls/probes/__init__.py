"""Interface `probes`: memory-access probes (pointer-chasing latency, random-read bandwidth).

Every probe exposes ``allocate(size_bytes, salt, nparts)``, ``reset()`` (restore the
initial placement before a timed repeat), ``run_chase(steps, start) -> (value, hash)``
(checked against ``chain.chase``) and ``close()``. GPU probes also expose
``launch_chase`` / ``launch_random_reads`` for event timing. ``vmm_local`` / ``vmm_remote``
(vmm.py, XGNN Fig. 6b) are collective instead: every rank builds a continuous store on the CUDA
VMM backend, and rank 0's ``.probe`` (one of the above kinds) chases over one rank's shard of it.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from harness.needs import Needs
from harness.registry import register_impl, register_interface


@runtime_checkable
class Probe(Protocol):
    """A region of memory laid out as a pointer chain: ``allocate(size_bytes, salt, ...)`` fills it,
    ``close()`` frees it. Chase probes also have ``reset()`` and ``run_chase(steps, start)``; a
    ``shared_handle`` probe is collective and its ``probe`` (rank 0's, a chase probe) chases."""

    placement: str

    def allocate(self, size_bytes: int, salt: int, *args, **kwargs) -> None: ...

    def close(self) -> None: ...


class ProbeFactory(Protocol):
    def __call__(self, device: str, gpus: list[int], **options) -> Probe: ...


TRAITS = {
    "device_memory": "cudaMalloc'd parts, one per owner GPU (each part must fit its GPU)",
    "managed": "cudaMallocManaged: pages migrate on first touch, a timed repeat starts from reset()",
    "remote": "the chased memory is not the chasing GPU's own",
    "spread": "a part on every GPU it is given, the chasing GPU's own included (WholeGraph Table I's 8 GPUs)",
    "shared_handle": "collective: every rank builds the continuous store (CUDA VMM range exported through "
                     "shared handles), rank 0 chases over one rank's shard (XGNN Fig. 6(b))",
}

register_interface("probes", Probe, factory=ProbeFactory, traits=TRAITS,
                   summary="memory-access probes: pointer-chasing latency and random-read bandwidth")


@register_impl("probes", "local", needs=Needs(devices=("cpu", "cuda"), cuda_packages=("cupy",)),
               traits=("device_memory",), order=10, label="local",
               summary="all memory on the chasing device (GPU 0, or host memory on a CPU run)")
def make_local(device: str, gpus: list[int], **_):
    if device == "cpu":
        from .host import HostChaseProbe

        return HostChaseProbe()
    from .gpu import LocalProbe

    return LocalProbe(gpus[:1])


@register_impl("probes", "p2p", needs=Needs(devices=("cuda",), min_gpus=2, packages=("cupy",),
                                            peer_access=True), traits=("device_memory", "spread"),
               order=20, label="P2P",
               summary="cudaMalloc'd parts on every GPU, read by GPU 0 through peer access")
def make_p2p(device: str, gpus: list[int], **_):
    from .gpu import PeerProbe

    return PeerProbe(gpus)


@register_impl("probes", "p2p_remote", needs=Needs(devices=("cuda",), min_gpus=2, packages=("cupy",),
                                                   peer_access=True), traits=("device_memory", "remote"),
               order=30, label="P2P remote", summary="cudaMalloc'd parts on every GPU but GPU 0, read by GPU 0: pure peer latency")
def make_p2p_remote(device: str, gpus: list[int], **_):
    from .gpu import PeerProbe

    return PeerProbe(gpus[1:], chaser=gpus[0])


@register_impl("probes", "um_remote", needs=Needs(devices=("cuda",), min_gpus=2, packages=("cupy",)),
               traits=("managed", "remote"), order=40, label="UM remote",
               summary="cudaMallocManaged first-touched by every GPU but GPU 0: every access faults")
def make_um_remote(device: str, gpus: list[int], **_):
    from .gpu import ManagedProbe

    return ManagedProbe(gpus[1:], chaser=gpus[0])


@register_impl("probes", "um", needs=Needs(devices=("cuda",), min_gpus=1, packages=("cupy",)),
               traits=("managed", "spread"), order=40, label="UM",
               summary="cudaMallocManaged; each GPU first-touches its equal partition")
def make_um(device: str, gpus: list[int], **_):
    from .gpu import ManagedProbe

    return ManagedProbe(gpus)


@register_impl("probes", "host_zero_copy", needs=Needs(devices=("cuda",), min_gpus=1, packages=("cupy",)),
               traits=("remote",), order=50, label="host",
               summary="pinned mapped host memory read by GPU 0 over PCIe (zero copy)")
def make_host_zero_copy(device: str, gpus: list[int], host_cap_bytes: int | None = None, **_):
    from .gpu import PinnedHostProbe

    return PinnedHostProbe(gpus[:1], host_cap_bytes=host_cap_bytes)


@register_impl("probes", "vmm_local", needs=Needs(devices=("cpu", "cuda"), cuda_packages=("cupy",)),
               traits=("shared_handle",), order=60,
               summary="continuous store (CUDA VMM range, POSIX-fd shared handles) on every rank; rank 0 "
                       "chases over its own shard through the range")
def make_vmm_local(device: str, gpus: list[int], rank=None, **_):
    from .vmm import VmmChase

    return VmmChase(rank, owner=0)


@register_impl("probes", "vmm_remote", needs=Needs(devices=("cpu", "cuda"), min_world_size=2,
                                                   cuda_packages=("cupy",)),
               traits=("shared_handle", "remote"), order=70,
               summary="continuous store (CUDA VMM range, POSIX-fd shared handles) on every rank; rank 0 "
                       "chases over rank 1's shard, imported from rank 1's process")
def make_vmm_remote(device: str, gpus: list[int], rank=None, **_):
    from .vmm import VmmChase

    return VmmChase(rank, owner=1)


def parts_for(impl: str, gpus: list[int]) -> int:
    """How many parts an implementation spreads its memory over (one per owner GPU)."""
    if impl in ("p2p", "um"):
        return len(gpus)
    if impl in ("p2p_remote", "um_remote"):
        return len(gpus) - 1
    return 1
