"""GPU memory probes through CuPy: device-local, peer (P2P), managed (UM), pinned host.

All four run the same kernels of ``kernels/memprobe.cu`` from GPU 0 over a pointer
table of equal parts; only where the parts live differs.
"""

from __future__ import annotations

from pathlib import Path

from harness.errors import SkipPoint
from impls.core import cuda

from . import chain, memory

KERNEL_SOURCE = Path(__file__).with_name("kernels") / "memprobe.cu"
MAX_PARTS = 16
_HOST_ALLOC_PORTABLE = 1
_HOST_ALLOC_MAPPED = 2
_PEER_ALREADY_ENABLED = 704


def _cupy():
    import cupy

    return cupy


def launch(device: int, name: str, grid: int, block: int, args: tuple) -> None:
    """Kernel ``name`` of memprobe.cu on GPU ``device`` (impls.core.cuda: compiled once per
    device, on torch's current stream, which is CuPy's too: the default stream)."""
    cuda.launch(device, KERNEL_SOURCE, name, grid, block, args)


def l2_bytes(device: int) -> int:
    return int(_cupy().cuda.Device(device).attributes["L2CacheSize"])


def free_bytes(gpus: list[int]) -> list[int]:
    cp = _cupy()
    out = []
    for g in gpus:
        with cp.cuda.Device(g):
            out.append(int(cp.cuda.runtime.memGetInfo()[0]))
    return out


def enable_peer_access(chaser: int, peers: list[int]) -> None:
    cp = _cupy()
    with cp.cuda.Device(chaser):
        for peer in peers:
            if peer == chaser:
                continue
            if not cp.cuda.runtime.deviceCanAccessPeer(chaser, peer):
                raise SkipPoint(f"GPU{chaser} cannot access GPU{peer} as a peer")
            try:
                cp.cuda.runtime.deviceEnablePeerAccess(peer)
            except cp.cuda.runtime.CUDARuntimeError as exc:
                if getattr(exc, "status", None) != _PEER_ALREADY_ENABLED:
                    raise


def fill(ptr: int, first_index: int, count: int, salt: int, device: int) -> None:
    cp = _cupy()
    import numpy as np

    with cp.cuda.Device(device):
        sms = cp.cuda.Device(device).attributes["MultiProcessorCount"]
        launch(device, "fill_words", sms * 8, 256, (np.uint64(ptr), np.uint64(first_index),
                                                    np.uint64(count), np.uint64(salt)))
        cp.cuda.Device(device).synchronize()


class GpuChaseProbe:
    """Base: parts given as raw pointers, one per owner GPU; the chase runs from ``chaser``."""

    kind = ""

    @property
    def placement(self) -> str:
        owners = ",".join(str(g) for g in self.gpus[:self.nparts_used or len(self.gpus)])
        return f"{self.kind} on GPU {owners}, read from GPU {self.chaser}"

    def __init__(self, owners: list[int], chaser: int | None = None):
        if not owners:
            raise SkipPoint("no GPU selected")
        if len(owners) > MAX_PARTS:
            raise SkipPoint(f"at most {MAX_PARTS} GPUs supported by the probe kernel")
        self.cp = _cupy()
        self.gpus = list(owners)
        self.chaser = owners[0] if chaser is None else chaser
        self.part_ptrs: list[int] = []
        self.part_owner: list[int] = []
        self.part_elems = 0
        self.nparts_used = 0
        self.salt = 0
        self._keep: list = []
        self._table = None
        self._out = None
        self._flush = None

    # subclasses fill part_ptrs/part_owner/_keep
    def _allocate_parts(self, part_bytes: int, nparts: int) -> None:
        raise NotImplementedError

    def _admit(self, size_bytes: int, nparts: int) -> None:
        reason = memory.device_refusal(size_bytes, free_bytes(self.gpus[:nparts]))
        if reason:
            raise SkipPoint(reason)

    def allocate(self, size_bytes: int, salt: int, nparts: int | None = None) -> None:
        nparts = nparts or 1
        reason = chain.layout_refusal(size_bytes, nparts)
        if reason:
            raise SkipPoint(reason)
        self._admit(size_bytes, nparts)
        self.part_elems = size_bytes // 8 // nparts
        self.salt = salt
        self._allocate_parts(self.part_elems * 8, nparts)
        self.nparts_used = nparts
        self.reset()
        self._publish()

    def _publish(self) -> None:
        """The part-pointer table and the output words, on the chasing GPU."""
        cp = self.cp
        import numpy as np

        with cp.cuda.Device(self.chaser):
            self._table = cp.asarray(np.array(self.part_ptrs, dtype=np.uint64))
            self._out = cp.zeros(2, dtype=cp.uint64)

    def reset(self) -> None:
        """(Re)write every part from its owner GPU, restoring the initial placement."""
        for p, (ptr, owner) in enumerate(zip(self.part_ptrs, self.part_owner)):
            fill(ptr, p * self.part_elems, self.part_elems, self.salt, owner)

    def _chase_args(self, steps: int, start: int, first_step: int) -> tuple:
        import numpy as np

        return (self._table, np.int32(len(self.part_ptrs)), np.uint32(self.part_elems // chain.LINE_WORDS),
                np.uint64(self.salt & chain.MASK), np.uint64(first_step), np.int64(steps),
                np.uint64(start & chain.MASK), self._out)

    def run_chase(self, steps: int, start: int, first_step: int = 0) -> tuple[int, int]:
        cp = self.cp
        with cp.cuda.Device(self.chaser):
            launch(self.chaser, "pointer_chase", 1, 32, self._chase_args(steps, start, first_step))
            out = self._out.get()
        return int(out[0]), int(out[1])

    def launch_chase(self, steps: int, start: int, first_step: int) -> None:
        """The timed call: launch only (the timer's events bracket it on the same stream)."""
        launch(self.chaser, "pointer_chase", 1, 32, self._chase_args(steps, start, first_step))

    def launch_random_reads(self, threads: int, reads_per_thread: int, salt: int, first: int, out) -> None:
        """``threads`` x ``reads_per_thread`` reads from index ``first`` of the line permutation."""
        import numpy as np

        block = 256
        launch(self.chaser, "random_reads", threads // block, block,
               (self._table, np.int32(len(self.part_ptrs)), np.uint32(self.part_elems // chain.LINE_WORDS),
                np.uint64(self.salt & chain.MASK), np.uint64(salt & chain.MASK), np.uint64(first),
                np.int32(reads_per_thread), out))

    @property
    def cache_devices(self) -> list[int]:
        """GPUs whose L2 can hold lines of this memory: the chaser's, and each owner's (a peer's
        reads of a GPU's memory are served through that GPU's L2)."""
        return sorted({self.chaser, *self.part_owner})

    @property
    def l2_bytes(self) -> int:
        return l2_bytes(self.chaser)

    def flush_caches(self) -> int:
        """Evict every line the last launch left in an L2: 4x the L2 of each GPU in
        ``cache_devices`` overwritten (outside any timed region). Returns the bytes written per GPU."""
        import torch

        from harness.timing import CacheFlush

        if self._flush is None:
            self._flush = CacheFlush([f"cuda:{d}" for d in self.cache_devices])
        written = self._flush()
        for d in self.cache_devices:       # the probe's kernels run on each GPU's default stream
            torch.cuda.synchronize(d)
        return written

    def close(self) -> None:
        self._keep.clear()
        if self._flush is not None:
            import torch

            self._flush = None
            torch.cuda.empty_cache()
        self._table = None
        self._out = None
        self.cp.get_default_memory_pool().free_all_blocks()


class LocalProbe(GpuChaseProbe):
    """All memory in GPU 0's device memory (plain cudaMalloc)."""

    kind = "device memory (cudaMalloc)"

    def _allocate_parts(self, part_bytes, nparts):
        cp = self.cp
        with cp.cuda.Device(self.chaser):
            for _ in range(nparts):
                mem = cp.cuda.memory.Memory(part_bytes)
                self._keep.append(mem)
                self.part_ptrs.append(int(mem.ptr))
                self.part_owner.append(self.chaser)


class PeerProbe(GpuChaseProbe):
    """Equal parts in every selected GPU's device memory (cudaMalloc), peer access on."""

    kind = "device memory (cudaMalloc), equal parts, peer access"

    def _allocate_parts(self, part_bytes, nparts):
        cp = self.cp
        enable_peer_access(self.chaser, self.gpus[:nparts])
        for g in self.gpus[:nparts]:  # one part per owner GPU
            with cp.cuda.Device(g):
                mem = cp.cuda.memory.Memory(part_bytes)
            self._keep.append(mem)
            self.part_ptrs.append(int(mem.ptr))
            self.part_owner.append(g)


class ManagedProbe(GpuChaseProbe):
    """One cudaMallocManaged allocation; GPU g first-touches (initializes) part g."""

    kind = "managed memory (cudaMallocManaged), equal parts first-touched by their owners"

    def _admit(self, size_bytes, nparts):
        reason = memory.um_refusal(size_bytes, free_bytes(self.gpus[:nparts]),
                                   chaser_free=free_bytes([self.chaser])[0])
        if reason:
            raise SkipPoint(reason)

    def _allocate_parts(self, part_bytes, nparts):
        cp = self.cp
        with cp.cuda.Device(self.chaser):
            mem = cp.cuda.memory.ManagedMemory(part_bytes * nparts)
        self._keep.append(mem)
        for i, g in enumerate(self.gpus[:nparts]):
            self.part_ptrs.append(int(mem.ptr) + i * part_bytes)
            self.part_owner.append(g)


class PinnedHostProbe(GpuChaseProbe):
    """Pinned, mapped host memory read by GPU 0 directly (zero copy over PCIe)."""

    kind = "pinned mapped host memory (zero copy)"

    def __init__(self, gpus, host_cap_bytes: int | None = None):
        super().__init__(gpus[:1])
        self.host_cap_bytes = host_cap_bytes
        self._host_ptrs: list[int] = []

    def _admit(self, size_bytes, nparts):
        import psutil

        reason = memory.host_refusal(size_bytes, psutil.virtual_memory().available, self.host_cap_bytes)
        if reason:
            raise SkipPoint(reason)

    def _allocate_parts(self, part_bytes, nparts):
        cp = self.cp
        rt = cp.cuda.runtime
        with cp.cuda.Device(self.chaser):
            for _ in range(nparts):
                host = rt.hostAlloc(part_bytes, _HOST_ALLOC_PORTABLE | _HOST_ALLOC_MAPPED)
                self._host_ptrs.append(host)
                # unified addressing: a mapped pinned pointer is valid on the device as is
                self.part_ptrs.append(int(host))
                self.part_owner.append(self.chaser)

    def close(self):
        rt = self.cp.cuda.runtime
        for ptr in self._host_ptrs:
            rt.freeHost(ptr)
        self._host_ptrs.clear()
        super().close()


class MappedProbe(GpuChaseProbe):
    """Parts that a store allocated and mapped for the chasing GPU (one segment of a CUDA VMM range:
    impls/probes/vmm.py). They are filled once, from the chasing GPU through that mapping; the
    memory stays on its owner (no migration), so there is nothing to restore between repeats."""

    def __init__(self, ptrs: list[int], owners: list[int], chaser: int, kind: str):
        super().__init__(sorted(set(owners)), chaser=chaser)
        self.kind = kind
        self._given = (list(ptrs), list(owners))

    def attach(self, part_elems: int, salt: int) -> None:
        ptrs, owners = self._given
        if part_elems < chain.LINE_WORDS:
            raise SkipPoint(f"a part of {part_elems} words holds no whole {chain.LINE_BYTES}-byte line")
        self.part_ptrs, self.part_owner = list(ptrs), list(owners)
        self.part_elems, self.salt, self.nparts_used = part_elems, salt, len(ptrs)
        for p, ptr in enumerate(self.part_ptrs):
            fill(ptr, p * part_elems, part_elems, salt, self.chaser)
        self._publish()

    def reset(self) -> None:
        """Mapped device memory does not move: the first fill still holds."""
