// Hopper's bulk copy unit (TMA, `cp.async.bulk`) and the shared-memory barriers it completes on,
// for the gathers that move whole rows with one instruction instead of a warp of 16-byte accesses.
//
// A bulk load (global -> shared) completes on an mbarrier: the issuing thread announces the bytes
// (arrive.expect_tx), the copy unit counts them in, and waiters test the barrier's phase parity. A
// bulk store (shared -> global, peer memory included) is tracked in per-thread bulk groups: commit,
// then wait_group.read N before the shared buffer is written again (at most N groups still
// reading it) and wait_group 0 before the data must be visible. Shared memory written by ordinary
// stores and read next by the copy unit needs fence.proxy.async in each writing thread first.
//
// Built for the device (sm_90 and later) these are the PTX instructions; anywhere else (the CPU
// emulator of the tests, tests/sampling/cuda_emu.h) plain synchronous copies with the same meaning,
// so the kernels' logic runs on a CPU.

#pragma once

#ifndef DYN_SHARED   // (common.cuh defines the same; the emulator its own)
#define DYN_SHARED(T, name) extern __shared__ __align__(16) unsigned char name##_raw[]; T* name = (T*)name##_raw
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define HAVE_BULK_COPY 1

__device__ __forceinline__ unsigned smem_addr(const void* p) {   // (no header needed under NVRTC)
    unsigned addr;
    asm("{\n\t.reg .u64 a;\n\tcvta.to.shared.u64 a, %1;\n\tcvt.u32.u64 %0, a;\n\t}" : "=r"(addr) : "l"(p));
    return addr;
}
__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
// the barriers' initialisation visible to the copy unit before it completes on them
__device__ __forceinline__ void mbar_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void mbar_expect_bytes(unsigned long long* bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity) {
    unsigned done = 0;
    do {
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done)
                     : "r"(smem_addr(bar)), "r"(parity)
                     : "memory");
    } while (!done);
}
// global (local or peer memory) -> this block's shared memory; completes `bytes` on `bar`
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     smem_addr(dst)),
                 "l"(src), "r"(bytes), "r"(smem_addr(bar))
                 : "memory");
}
// this block's shared memory -> global (local or peer memory), in the thread's open bulk group
__device__ __forceinline__ void bulk_store(void* dst, const void* src, unsigned bytes) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(smem_addr(src)),
                 "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// at most one of this thread's committed groups still reads its shared source
__device__ __forceinline__ void bulk_wait_read_1() { asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory"); }
// every committed group of this thread complete (its writes done)
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
// ordinary shared-memory accesses of this thread ordered before the copy unit's next ones
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

#else
#define HAVE_BULK_COPY 0

__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned) { *bar = 0; }
__device__ __forceinline__ void mbar_init_fence() {}
__device__ __forceinline__ void mbar_expect_bytes(unsigned long long*, unsigned) {}
__device__ __forceinline__ void mbar_wait(unsigned long long*, unsigned) {}
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes, unsigned long long*) {
    for (unsigned i = 0; i < bytes; ++i) ((unsigned char*)dst)[i] = ((const unsigned char*)src)[i];
}
__device__ __forceinline__ void bulk_store(void* dst, const void* src, unsigned bytes) {
    for (unsigned i = 0; i < bytes; ++i) ((unsigned char*)dst)[i] = ((const unsigned char*)src)[i];
}
__device__ __forceinline__ void bulk_commit() {}
__device__ __forceinline__ void bulk_wait_read_1() {}
__device__ __forceinline__ void bulk_wait_all() {}
__device__ __forceinline__ void fence_async_shared() {}
#endif
