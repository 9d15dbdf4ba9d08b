"""A stand-in for ``cuda.bindings.driver``'s VMM calls, and threads as ranks (tests only).

``FakeDriver`` keeps the bookkeeping a real driver does for cuMemCreate / export / import /
cuMemAddressReserve / cuMemMap / cuMemSetAccess / unmap / free / release, across threads
that play one process per rank each (each thread has its own current context, hence its own
GPU). Exported handles are real file descriptors (memfd) naming the allocation, so the fd
passing between "ranks" is the real one. ``fail`` injects a result for (call, GPU). Nothing is
allocated: the point is the orchestration (order, agreement, cleanup), not memory.
"""

from __future__ import annotations

import enum
import functools
import itertools
import os
import threading
from types import SimpleNamespace

from harness.launcher import RankContext


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_INVALID_DEVICE = 101
    CUDA_ERROR_NOT_SUPPORTED = 801


TEXT = {CUresult.CUDA_ERROR_NOT_SUPPORTED: b"operation not supported",
        CUresult.CUDA_ERROR_OUT_OF_MEMORY: b"out of memory",
        CUresult.CUDA_ERROR_INVALID_VALUE: b"invalid argument",
        CUresult.CUDA_ERROR_INVALID_DEVICE: b"invalid device ordinal"}
VMM_ATTR, FD_ATTR = 102, 103


class _Located:
    def __init__(self):
        self.location = SimpleNamespace(type=None, id=None)


class FakeDriver:
    CUresult = CUresult
    CUdevice_attribute = SimpleNamespace(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED=VMM_ATTR,
                                         CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED=FD_ATTR)
    CUmemAllocationType = SimpleNamespace(CU_MEM_ALLOCATION_TYPE_PINNED=1)
    CUmemLocationType = SimpleNamespace(CU_MEM_LOCATION_TYPE_DEVICE=1)
    CUmemAllocationHandleType = SimpleNamespace(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR=1)
    CUmemAllocationGranularity_flags = SimpleNamespace(CU_MEM_ALLOC_GRANULARITY_RECOMMENDED=1)
    CUmemAccess_flags = SimpleNamespace(CU_MEM_ACCESS_FLAGS_PROT_READWRITE=3)
    CUmemAllocationProp = _Located
    CUmemAccessDesc = _Located

    def __init__(self, granularity=None, fail=None, attrs=None):
        self.granularity = granularity or {}          # GPU -> granularity (default 2 MiB)
        self.fail = dict(fail or {})                  # (call, GPU) -> CUresult
        self.attrs = dict(attrs or {})                # (attribute, GPU) -> value (default 1)
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        self.phys: dict[int, dict] = {}               # allocation -> {gpu, size, refs}
        self.handles: dict[int, int] = {}             # handle -> allocation
        self.reserved: dict[int, tuple[int, int]] = {}  # va -> (size, gpu of the reserving rank)
        self.mappings: dict[int, tuple[int, int, int]] = {}  # va -> (size, allocation, gpu)
        self.access: dict[int, set] = {}              # mapped va -> GPUs allowed
        self.retained: dict[int, int] = {}            # GPU -> primary context retains
        self.next_va = 1 << 40
        self.local = threading.local()
        self.calls: list[tuple[str, int | None]] = []

    # -- helpers
    def _gpu(self):
        stack = getattr(self.local, "stack", [])
        return stack[-1][1] if stack else None

    def _failing(self, name):
        with self.lock:
            self.calls.append((name, self._gpu()))
        return self.fail.get((name, self._gpu()))

    def _phys_unref(self, alloc):
        self.phys[alloc]["refs"] -= 1
        if self.phys[alloc]["refs"] == 0:
            del self.phys[alloc]

    # -- the driver's calls used by impls/storage/vmm.py
    def cuGetErrorString(self, err):
        return CUresult.CUDA_SUCCESS, TEXT.get(err, b"unknown")

    def cuInit(self, flags):
        return (CUresult.CUDA_SUCCESS,)

    def cuDeviceGet(self, ordinal):
        return CUresult.CUDA_SUCCESS, ordinal

    def cuDeviceGetAttribute(self, attr, dev):
        return CUresult.CUDA_SUCCESS, self.attrs.get((attr, dev), 1)

    def cuDevicePrimaryCtxRetain(self, dev):
        with self.lock:
            self.retained[dev] = self.retained.get(dev, 0) + 1
        return CUresult.CUDA_SUCCESS, ("ctx", dev)

    def cuDevicePrimaryCtxRelease(self, dev):
        with self.lock:
            self.retained[dev] -= 1
            if not self.retained[dev]:
                del self.retained[dev]
        return (CUresult.CUDA_SUCCESS,)

    def cuCtxPushCurrent(self, ctx):
        if not hasattr(self.local, "stack"):
            self.local.stack = []
        self.local.stack.append(ctx)
        return (CUresult.CUDA_SUCCESS,)

    def cuCtxPopCurrent(self):
        ctx = self.local.stack.pop()
        return CUresult.CUDA_SUCCESS, ctx

    def cuCtxSynchronize(self):
        return (CUresult.CUDA_SUCCESS,)

    def cuMemGetAllocationGranularity(self, prop, flag):
        assert self._gpu() == prop.location.id, "granularity asked outside the GPU's context"
        return CUresult.CUDA_SUCCESS, self.granularity.get(prop.location.id, 2 << 20)

    def cuMemCreate(self, size, prop, flags):
        err = self._failing("cuMemCreate")
        if err:
            return err, None
        gpu = prop.location.id
        assert prop.requestedHandleTypes == 1 and prop.type == 1 and prop.location.type == 1
        assert size % self.granularity.get(gpu, 2 << 20) == 0, "size is not a multiple of the granularity"
        with self.lock:
            alloc, handle = next(self.ids), next(self.ids)
            self.phys[alloc] = {"gpu": gpu, "size": size, "refs": 1}
            self.handles[handle] = alloc
        return CUresult.CUDA_SUCCESS, handle

    def cuMemExportToShareableHandle(self, handle, kind, flags):
        err = self._failing("cuMemExportToShareableHandle")
        if err:
            return err, None
        fd = os.memfd_create("fake-cuda-export")
        os.write(fd, str(self.handles[handle]).encode())
        return CUresult.CUDA_SUCCESS, fd

    def cuMemImportFromShareableHandle(self, fd, kind):
        err = self._failing("cuMemImportFromShareableHandle")
        if err:
            return err, None
        alloc = int(os.pread(fd, 32, 0))
        with self.lock:
            handle = next(self.ids)
            self.handles[handle] = alloc
            self.phys[alloc]["refs"] += 1
        return CUresult.CUDA_SUCCESS, handle

    def cuMemRelease(self, handle):
        with self.lock:
            alloc = self.handles.pop(handle)
            self._phys_unref(alloc)
        return (CUresult.CUDA_SUCCESS,)

    def cuMemAddressReserve(self, size, alignment, addr, flags):
        err = self._failing("cuMemAddressReserve")
        if err:
            return err, None
        with self.lock:
            va = -(-self.next_va // alignment) * alignment
            self.next_va = va + size + alignment
            self.reserved[va] = (size, self._gpu())
        return CUresult.CUDA_SUCCESS, va

    def cuMemAddressFree(self, va, size):
        with self.lock:
            assert self.reserved.pop(va)[0] == size
            assert not any(va <= m < va + size for m in self.mappings), "freeing a range still mapped"
        return (CUresult.CUDA_SUCCESS,)

    def cuMemMap(self, va, size, offset, handle, flags):
        err = self._failing("cuMemMap")
        if err:
            return (err,)
        with self.lock:
            alloc = self.handles[handle]
            assert offset == 0 and self.phys[alloc]["size"] == size
            assert any(r <= va and va + size <= r + s for r, (s, _) in self.reserved.items()), "not reserved"
            assert va not in self.mappings
            self.mappings[va] = (size, alloc, self._gpu())
            self.phys[alloc]["refs"] += 1
        return (CUresult.CUDA_SUCCESS,)

    def cuMemSetAccess(self, va, size, descs, count):
        err = self._failing("cuMemSetAccess")
        if err:
            return (err,)
        with self.lock:
            assert va in self.mappings and self.mappings[va][0] == size
            self.access.setdefault(va, set()).update(d.location.id for d in descs[:count])
        return (CUresult.CUDA_SUCCESS,)

    def cuMemUnmap(self, va, size):
        with self.lock:
            msize, alloc, _ = self.mappings.pop(va)
            assert msize == size
            self.access.pop(va, None)
            self._phys_unref(alloc)
        return (CUresult.CUDA_SUCCESS,)

    # -- checks
    def owner_gpu(self, va: int) -> int:
        """The GPU whose memory is mapped at ``va``."""
        return self.phys[self.mappings[va][1]]["gpu"]

    def clean(self) -> bool:
        return not (self.phys or self.handles or self.reserved or self.mappings or self.retained)


class ThreadGather:
    """all_gather_object for threads playing ranks: ``gather.bind(rank)`` is one rank's."""

    def __init__(self, world: int, timeout_s: float = 30.0):
        self.barrier = threading.Barrier(world, timeout=timeout_s)
        self.slots = [None] * world

    def __call__(self, rank: int, obj) -> list:
        self.slots[rank] = obj
        self.barrier.wait()
        out = list(self.slots)
        self.barrier.wait()
        return out

    def bind(self, rank: int):
        return functools.partial(self, rank)


def run_ranks(world: int, fn, timeout_s: float = 30.0) -> tuple[list, list]:
    """``fn(rank_ctx, all_gather)`` on ``world`` threads; returns (results, exceptions)."""
    gather = ThreadGather(world, timeout_s)
    results, errors = [None] * world, [None] * world

    def body(r):
        try:
            results[r] = fn(RankContext(r, world, r, "cuda", "nccl"), gather.bind(r))
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors[r] = exc

    threads = [threading.Thread(target=body, args=(r,), daemon=True) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout_s)
    assert not any(t.is_alive() for t in threads), "a rank hung"
    return results, errors


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))
