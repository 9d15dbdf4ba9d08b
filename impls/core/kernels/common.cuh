// Shared by sampling.cu and unique.cu: the counter-based random numbers, the graph
// descriptor every sampling kernel reads the CSR through, and warp-level read counting.
//
// Random numbers. Draw j of seed position b in a batch is
//     mix64(key ^ (b * GOLDEN + j)) >> 32        (key = mix64(user seed), host side)
// and a uniform integer in [0, n) is (r * n) >> 32 (multiply-shift; bias <= n / 2^32).
// impls/sampling/cpu.py computes the same numbers, so CPU and GPU samples are identical.
//
// Graph descriptor (int64 words, built by impls/sampling/csr.py, copied to shared memory):
//   [0] nparts  [1] rows_per_part  [2] count_world (0: no counting)  [3] count_rpp
//   [4] my_rank [5] sector_shift   [6] counters (u64*, 4 words)      [7] unused
//   [8 + p]              indptr part p  (int64, rows_per_part + 1 global edge offsets)
//   [8 + MAXP + p]       index part p   (ids of the part's rows, int32 or int64)
//   [8 + 2 MAXP + p]     first global edge position held by part p
//   [8 + 3 MAXP + q]     first global edge position of virtual (counting) part q
// With one part, part 0 is the whole CSR; the last part may hold more than rows_per_part rows. The counting partition is the RowPartition of
// the rows over count_world ranks; a read of a row owned by another rank is remote.
//
// Kernels written for this file use only full-warp intrinsics at warp-uniform points and
// DYN_SHARED for dynamic shared memory, so tests/sampling/cuda_emu.h can run them on a CPU.

#pragma once

typedef unsigned long long u64;
typedef unsigned int u32;

#define MAXP 16
#define DESC_WORDS (8 + 4 * MAXP)
#define GOLDEN 0x9E3779B97F4A7C15ULL
#define FULL_MASK 0xffffffffu

#ifndef DYN_SHARED
#define DYN_SHARED(T, name) extern __shared__ __align__(16) unsigned char name##_raw[]; T* name = (T*)name##_raw
#endif

__device__ __forceinline__ u64 mix64(u64 z) {
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

__device__ __forceinline__ u32 rand32(u64 key, long long b, long long j) {
    return (u32)(mix64(key ^ ((u64)b * GOLDEN + (u64)j)) >> 32);
}

// uniform integer in [0, n), n < 2^32
__device__ __forceinline__ u32 uniform_below(u64 key, long long b, long long j, long long n) {
    return (u32)(((u64)rand32(key, b, j) * (u64)n) >> 32);
}

struct Graph {
    const long long* w;   // the descriptor words in shared memory
    __device__ __forceinline__ long long nparts() const { return w[0]; }
    __device__ __forceinline__ long long rpp() const { return w[1]; }
    // Rows [p * rpp, (p + 1) * rpp) are in part p; the last part also takes every row past
    // it (a larger last part: GGMS's host tier after the GPU buffers, impls/storage/tiered.py).
    __device__ __forceinline__ int part_of(long long v) const {
        if (w[0] == 1) return 0;
        const long long p = v / w[1];
        return (int)(p < w[0] - 1 ? p : w[0] - 1);
    }
    // start and degree of row v
    __device__ __forceinline__ void row(long long v, long long& start, long long& deg) const {
        const int p = part_of(v);
        const long long* ip = (const long long*)w[8 + p];
        const long long local = v - (long long)p * (w[0] == 1 ? 0 : w[1]);
        start = ip[local];
        deg = ip[local + 1] - start;
    }
    template <typename T>
    __device__ __forceinline__ T index(long long v, long long e) const {
        const int p = part_of(v);
        const T* base = (const T*)w[8 + MAXP + p];
        return base[e - w[8 + 2 * MAXP + p]];
    }
    // --- counting (virtual partition) ---
    __device__ __forceinline__ bool counting() const { return w[2] != 0 && w[6] != 0; }
    __device__ __forceinline__ long long owner(long long v) const { return v / w[3]; }
    __device__ __forceinline__ bool remote(long long v) const { return owner(v) != w[4]; }
    // sector of indptr entry v + plus in its owner's shard
    __device__ __forceinline__ u64 indptr_sector(long long v, int plus) const {
        const long long q = owner(v);
        return ((u64)q << 56) | (u64)((((v - q * w[3]) + plus) * 8) >> w[5]);
    }
    // sector of edge position e (a neighbor id of row v) in its owner's shard
    __device__ __forceinline__ u64 index_sector(long long v, long long e, int id_bytes) const {
        const long long q = owner(v);
        return ((u64)q << 56) | (1ULL << 55) | (u64)(((e - w[8 + 3 * MAXP + q]) * id_bytes) >> w[5]);
    }
    __device__ __forceinline__ u64* counters() const { return (u64*)w[6]; }
};

// Copies the descriptor into shared memory; every thread of the block must call it.
__device__ __forceinline__ Graph load_graph(const long long* __restrict__ desc, long long* sdesc) {
    for (int i = threadIdx.x; i < DESC_WORDS; i += blockDim.x) sdesc[i] = desc[i];
    __syncthreads();
    Graph g;
    g.w = sdesc;
    return g;
}

// One warp-wide load instruction: lanes with `reading` load an element in sector `sector`
// of its owner's shard (`remote` when the owner is another rank). Counts the distinct
// sectors among the lanes (the 32-byte transactions the memory system coalesces them into)
// and the useful bytes: `bytes` for each lane with `distinct` set (lanes loading the same
// element set it once). Must be called by all 32 lanes of the warp (warp-uniform point).
//   counters[0] remote sectors, [1] remote useful bytes, [2] all sectors, [3] all useful bytes
__device__ __forceinline__ void count_request(const Graph& g, bool reading, bool remote, u64 sector,
                                              bool distinct, int bytes) {
    const int lane = threadIdx.x & 31;
    const u64 key = reading ? sector : (~0ULL - (u64)lane);
    const u32 same = __match_any_sync(FULL_MASK, key);
    const bool leader = reading && (__ffs(same) - 1 == lane);
    const u32 all_sec = __ballot_sync(FULL_MASK, leader);
    const u32 rem_sec = __ballot_sync(FULL_MASK, leader && remote);
    const u32 all_el = __ballot_sync(FULL_MASK, reading && distinct);
    const u32 rem_el = __ballot_sync(FULL_MASK, reading && distinct && remote);
    if (lane == 0 && all_sec) {
        u64* c = g.counters();
        atomicAdd(&c[0], (u64)__popc(rem_sec));
        atomicAdd(&c[1], (u64)__popc(rem_el) * (u64)bytes);
        atomicAdd(&c[2], (u64)__popc(all_sec));
        atomicAdd(&c[3], (u64)__popc(all_el) * (u64)bytes);
    }
}

// The two indptr loads (v and v + 1) of a row lookup that every lane of a group makes
// (lane_g: the lane's index in its group; the group's first lane in each warp counts the
// element once).
__device__ __forceinline__ void count_row_lookup(const Graph& g, bool active, long long v, int lane_g) {
    if (!g.counting()) return;
    const bool rem = active && g.remote(v);
    const bool first = (lane_g & 31) == 0;
    count_request(g, active, rem, active ? g.indptr_sector(v, 0) : 0, first, 8);
    count_request(g, active, rem, active ? g.indptr_sector(v, 1) : 0, first, 8);
}
