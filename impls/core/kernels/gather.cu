// One-kernel global gather over a pointer table (WholeGraph Fig. 4, right; blog "chunked"
// with a part per rank, "continuous" with ONE part: every shard mapped into one virtual range,
// so row id is read at table[0] + id * row_bytes with no part lookup).
//
// Work item = one V-sized vector of one output row: item -> (row = item / vecs_per_row,
// v = item % vecs_per_row). Consecutive threads read consecutive vectors of a row
// (coalesced), each thread keeps UNROLL independent loads in flight before storing, and
// the grid strides over all items. Peer shards are read directly through NVLink.
// Requirements checked on the host: every row offset is V-aligned (row_bytes % V == 0),
// ids < 2^32, items per launch < 2^32, at most MAX_PARTS parts. Part p holds ids
// [p * rows_per_part, (p + 1) * rows_per_part); the last part also every id past it (so with
// one part, part 0 holds every id and rows_per_part is not used).
//
// Two other ways to issue the reads, for what a remote read costs on the links (each read sends a
// request packet and gets a response, and the share of protocol bytes falls with the request size):
// -DLOAD_L2_256 gives every 16-byte load the L2::256B prefetch-size hint, and gather_bulk reads
// whole rows with the bulk copy unit (bulk.cuh), one instruction per row, STAGES rows in flight
// per warp.

#define MAX_PARTS 16
#ifndef UNROLL   // loads in flight per thread; the host may compile other values (-DUNROLL=n)
#define UNROLL 4
#endif

#include "bulk.cuh"

typedef unsigned long long u64;

template <typename V>
__device__ __forceinline__ V load_vec(const V* p) { return *p; }
#if defined(LOAD_L2_256) && defined(__CUDA_ARCH__)
template <>
__device__ __forceinline__ uint4 load_vec<uint4>(const uint4* p) {
    uint4 v;
    asm("ld.global.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}
#endif

template <typename V>
__device__ __forceinline__ void gather_rows(const u64* __restrict__ table, int nparts,
                                            unsigned rows_per_part, const long long* __restrict__ ids,
                                            unsigned n_items, unsigned vecs_per_row,
                                            unsigned row_bytes, V* __restrict__ out) {
    __shared__ const char* parts[MAX_PARTS];
    if (threadIdx.x < nparts) parts[threadIdx.x] = (const char*)table[threadIdx.x];
    __syncthreads();
    const unsigned stride = gridDim.x * blockDim.x;
    for (unsigned base = blockIdx.x * blockDim.x + threadIdx.x; base < n_items;
         base += stride * UNROLL) {
        V vals[UNROLL];
        #pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            unsigned item = base + k * stride;
            if (item < n_items) {
                unsigned row = item / vecs_per_row;
                unsigned v = item - row * vecs_per_row;
                unsigned id = (unsigned)__ldg(ids + row);
                unsigned part = nparts == 1 ? 0u : id / rows_per_part;   // uniform branch
                if (part >= (unsigned)nparts) part = nparts - 1;   // a larger last part (host tier)
                unsigned local = id - part * rows_per_part;
                vals[k] = load_vec((const V*)(parts[part] + (u64)local * row_bytes + (u64)v * sizeof(V)));
            }
        }
        #pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            unsigned item = base + k * stride;
            if (item < n_items) out[item] = vals[k];
        }
    }
}

#define GATHER_KERNEL(NAME, V)                                                                    \
    extern "C" __global__ void NAME(const u64* __restrict__ table, int nparts,                    \
                                    unsigned rows_per_part, const long long* __restrict__ ids,    \
                                    unsigned n_items, unsigned vecs_per_row, unsigned row_bytes,  \
                                    V* __restrict__ out) {                                        \
        gather_rows<V>(table, nparts, rows_per_part, ids, n_items, vecs_per_row, row_bytes, out); \
    }

GATHER_KERNEL(gather_v16, uint4)
GATHER_KERNEL(gather_v8, uint2)
GATHER_KERNEL(gather_v4, unsigned int)
GATHER_KERNEL(gather_v2, unsigned short)

// Whole rows through the bulk copy unit: warp w of the grid reads rows w, w + W, w + 2W, ... (W
// warps in all). Lane 0 keeps `stages` rows in flight, each a bulk load into the warp's shared
// buffers completing on its own mbarrier; the warp then writes the row out with 16-byte stores and
// lane 0 reuses the stage for the row `stages` later. Dynamic shared memory: the mbarriers
// (warps x stages x 8 bytes, rounded up to 16) then warps x stages x row_bytes; row_bytes % 16 == 0.
extern "C" __global__ void gather_bulk(const u64* __restrict__ table, int nparts, unsigned rows_per_part,
                                       const long long* __restrict__ ids, unsigned n_rows, unsigned row_bytes,
                                       unsigned stages, unsigned char* __restrict__ out) {
    DYN_SHARED(unsigned char, smem);
    __shared__ const char* parts[MAX_PARTS];
    if (threadIdx.x < nparts) parts[threadIdx.x] = (const char*)table[threadIdx.x];
    __syncthreads();
    const unsigned warps = blockDim.x / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const unsigned all_warps = gridDim.x * warps, first = blockIdx.x * warps + warp;
    unsigned long long* bars = (unsigned long long*)smem + warp * stages;
    unsigned char* buf = smem + ((warps * stages * 8 + 15) / 16) * 16 + (u64)warp * stages * row_bytes;
    const unsigned vecs = row_bytes / 16;
    if (lane == 0) {
        for (unsigned s = 0; s < stages; ++s) mbar_init(bars + s, 1);
        mbar_init_fence();
        for (unsigned s = 0; s < stages; ++s) {
            unsigned long long row = first + (unsigned long long)s * all_warps;
            if (row < n_rows) {
                unsigned id = (unsigned)ids[row];
                unsigned part = nparts == 1 ? 0u : id / rows_per_part;
                if (part >= (unsigned)nparts) part = nparts - 1;
                mbar_expect_bytes(bars + s, row_bytes);
                bulk_load(buf + (u64)s * row_bytes, parts[part] + (u64)(id - part * rows_per_part) * row_bytes,
                          row_bytes, bars + s);
            }
        }
    }
    __syncwarp();
    for (unsigned k = 0;; ++k) {
        unsigned long long row = first + (unsigned long long)k * all_warps;
        if (row >= n_rows) break;                                     // warp-uniform
        const unsigned s = k % stages;
        unsigned char* stage = buf + (u64)s * row_bytes;
        mbar_wait(bars + s, (k / stages) & 1u);
        uint4* dst = (uint4*)(out + row * row_bytes);
        for (unsigned v = lane; v < vecs; v += 32) dst[v] = ((const uint4*)stage)[v];
        fence_async_shared();              // these reads of the stage before the copy unit refills it
        __syncwarp();
        if (lane == 0) {
            unsigned long long next = row + (unsigned long long)stages * all_warps;
            if (next < n_rows) {
                unsigned id = (unsigned)ids[next];
                unsigned part = nparts == 1 ? 0u : id / rows_per_part;
                if (part >= (unsigned)nparts) part = nparts - 1;
                mbar_expect_bytes(bars + s, row_bytes);
                bulk_load(stage, parts[part] + (u64)(id - part * rows_per_part) * row_bytes, row_bytes, bars + s);
            }
        }
        __syncwarp();
    }
}
