// A small CUDA-on-CPU emulator for the sampling kernels (tests only).
//
// Each kernel launch runs one OS thread per CUDA thread of a block; the threads walk the
// grid's blocks one after another (a block barrier between blocks), so `__shared__`
// (turned into function statics) is per block as on a GPU. __syncthreads is a block
// barrier; warp intrinsics (__ballot_sync, __match_any_sync, __any_sync, __shfl_sync, __syncwarp) are
// an exchange through per-warp slots between two warp barriers, so they must be reached by
// all 32 lanes, as the kernels' full masks promise. Atomics use std::atomic_ref.
// It checks logic, not speed or the GPU memory model beyond these barriers.
#pragma once
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};
// CUDA's vector types the gather kernels move rows in
struct alignas(16) uint4 {
    unsigned x, y, z, w;
};
struct alignas(8) uint2 {
    unsigned x, y;
};

namespace emu {
struct Warp {
    std::barrier<> bar{32};
    unsigned long long slot[32];
};
struct Launch {
    std::unique_ptr<std::barrier<>> block_bar;
    std::vector<std::unique_ptr<Warp>> warps;
    std::vector<unsigned char> smem;
};
inline Launch* current = nullptr;
inline thread_local dim3 tidx, bidx;
inline dim3 bdim, gdim;

inline Warp& warp() { return *current->warps[tidx.x / 32]; }
inline int lane() { return tidx.x % 32; }

template <typename F>
unsigned long long exchange(unsigned long long value, F&& reduce) {
    Warp& w = warp();
    w.slot[lane()] = value;
    w.bar.arrive_and_wait();
    unsigned long long out = reduce(w.slot);
    w.bar.arrive_and_wait();
    return out;
}

inline void launch(unsigned grid, unsigned block, size_t shmem, const std::function<void()>& body) {
    if (block == 0 || block % 32 != 0) throw std::runtime_error("emulated blocks must be a multiple of 32 threads");
    Launch l;
    l.block_bar = std::make_unique<std::barrier<>>(block);
    for (unsigned w = 0; w < block / 32; ++w) l.warps.push_back(std::make_unique<Warp>());
    l.smem.assign(shmem + 16, 0xA5);  // garbage, as on a GPU
    current = &l;
    bdim.x = block;
    gdim.x = grid;
    std::vector<std::thread> threads;
    threads.reserve(block);
    for (unsigned t = 0; t < block; ++t) {
        threads.emplace_back([&, t] {
            tidx.x = t;
            for (unsigned b = 0; b < grid; ++b) {
                bidx.x = b;
                body();
                l.block_bar->arrive_and_wait();
            }
        });
    }
    for (auto& th : threads) th.join();
    current = nullptr;
}
}  // namespace emu

#define threadIdx (emu::tidx)
#define blockIdx (emu::bidx)
#define blockDim (emu::bdim)
#define gridDim (emu::gdim)
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) alignas(n)
#define __restrict__ __restrict
#define DYN_SHARED(T, name) T* name = (T*)(((uintptr_t)emu::current->smem.data() + 15) & ~(uintptr_t)15)

inline void __syncthreads() { emu::current->block_bar->arrive_and_wait(); }
inline void __syncwarp(unsigned = 0xffffffffu) { emu::warp().bar.arrive_and_wait(); }
inline unsigned __ballot_sync(unsigned, bool p) {
    return (unsigned)emu::exchange(p ? 1 : 0, [](unsigned long long* s) {
        unsigned long long m = 0;
        for (int i = 0; i < 32; ++i) m |= (s[i] ? 1ULL : 0ULL) << i;
        return m;
    });
}
inline bool __any_sync(unsigned mask, bool p) { return __ballot_sync(mask, p) != 0; }
inline bool __all_sync(unsigned mask, bool p) { return __ballot_sync(mask, p) == 0xffffffffu; }
inline unsigned __match_any_sync(unsigned, unsigned long long v) {
    const int me = emu::lane();
    return (unsigned)emu::exchange(v, [me](unsigned long long* s) {
        unsigned long long m = 0;
        for (int i = 0; i < 32; ++i) m |= (s[i] == s[me] ? 1ULL : 0ULL) << i;
        return m;
    });
}
// each lane reads the value lane `src` offers (src may differ per lane, as on the GPU)
template <typename T>
inline T __shfl_sync(unsigned, T v, int src) {
    static_assert(sizeof(T) <= sizeof(unsigned long long), "emulated shuffles move up to 8 bytes");
    unsigned long long bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    bits = emu::exchange(bits, [src](unsigned long long* s) { return s[src & 31]; });
    T out;
    std::memcpy(&out, &bits, sizeof(T));
    return out;
}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }
template <typename T> inline T __ldg(const T* p) { return *p; }

inline int atomicAdd(int* p, int v) { return std::atomic_ref<int>(*p).fetch_add(v); }
inline unsigned atomicAdd(unsigned* p, unsigned v) { return std::atomic_ref<unsigned>(*p).fetch_add(v); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
    return std::atomic_ref<unsigned long long>(*p).fetch_add(v);
}
inline unsigned atomicCAS(unsigned* p, unsigned expected, unsigned desired) {
    std::atomic_ref<unsigned>(*p).compare_exchange_strong(expected, desired);
    return expected;
}
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long expected, unsigned long long desired) {
    std::atomic_ref<unsigned long long>(*p).compare_exchange_strong(expected, desired);
    return expected;
}
inline unsigned atomicOr(unsigned* p, unsigned v) { return std::atomic_ref<unsigned>(*p).fetch_or(v); }
inline unsigned long long atomicMax(unsigned long long* p, unsigned long long v) {
    std::atomic_ref<unsigned long long> a(*p);
    unsigned long long old = a.load();
    while (v > old && !a.compare_exchange_weak(old, v)) {
    }
    return old;
}
inline unsigned atomicMin(unsigned* p, unsigned v) {
    std::atomic_ref<unsigned> a(*p);
    unsigned old = a.load();
    while (v < old && !a.compare_exchange_weak(old, v)) {
    }
    return old;
}
