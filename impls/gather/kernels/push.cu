// The global gather pushed by the rows' owners (impls/gather/p2p_push.py): every rank posts its
// requests to the owners, and each owner writes the rows asked of it into the requesters' output
// buffers through NVLink stores, instead of every rank reading its rows from the owners. A remote
// read costs a request packet per response on the links; a remote write carries its data with it.
//
// Each rank's workspace (torch symmetric memory, mapped by every rank) holds
//   counts[world]      u32: the requests this rank posted to each owner in this call;
//   inbox[world][cap]  u64: the requests each requester posted here, (position << 32) | local row;
//   out[cap]           rows: where the owners write this rank's rows, in the order of its ids.
// A call: counts zeroed, push_requests (requester side), a barrier over the ranks, push_rows_v* or
// push_rows_bulk (owner side), a barrier; the requester's rows are then in its out.
//
// Requirements checked on the host: world <= MAX_RANKS, ids < world * rows_per_rank <= 2^32, at
// most cap ids per call and rank, cap * world * (row_bytes / V) < 2^32, row_bytes % V == 0 (and
// row_bytes % 16 == 0 for the bulk kernel).

#include "bulk.cuh"

#define MAX_RANKS 16
#define FULL_MASK 0xffffffffu
#ifndef UNROLL   // rows in flight per thread of push_rows_v*
#define UNROLL 4
#endif

typedef unsigned long long u64;

// Requester side: request i (global id ids[i]) goes to owner o = id / rows_per_rank as the entry
// (i << 32) | (id - o * rows_per_rank), into a slot of o's inbox row `me` taken from counts[o].
// Slots are handed out block by block: the lanes of a warp with the same owner take consecutive
// places in the block's run for that owner with one shared-memory atomic (their leader's), and one
// thread per owner then takes the block's run from counts[o] with one global atomic, so the
// counters see one atomic per owner and block of ids, not one per warp.
extern "C" __global__ void push_requests(const long long* __restrict__ ids, unsigned n, unsigned rows_per_rank,
                                         int world, int me, unsigned cap, const u64* __restrict__ inboxes,
                                         unsigned* __restrict__ counts) {
    __shared__ u64* boxes[MAX_RANKS];
    __shared__ unsigned block_count[MAX_RANKS];
    __shared__ unsigned block_base[MAX_RANKS];
    if (threadIdx.x < world) boxes[threadIdx.x] = (u64*)inboxes[threadIdx.x] + (u64)me * cap;
    const unsigned lane = threadIdx.x % 32;
    for (unsigned base = blockIdx.x * blockDim.x; base < n; base += gridDim.x * blockDim.x) {   // block-uniform
        if (threadIdx.x < world) block_count[threadIdx.x] = 0;
        __syncthreads();
        const unsigned i = base + threadIdx.x;
        const bool active = i < n;
        unsigned owner = 0xffffffffu, local = 0;
        if (active) {
            const u64 id = (u64)ids[i];
            owner = (unsigned)(id / rows_per_rank);
            local = (unsigned)(id - (u64)owner * rows_per_rank);
        }
        const unsigned group = __match_any_sync(FULL_MASK, owner);
        const int leader = __ffs(group) - 1;
        unsigned place = 0;
        if (active && (int)lane == leader) place = atomicAdd(block_count + owner, (unsigned)__popc(group));
        place = __shfl_sync(FULL_MASK, place, leader) + __popc(group & ((1u << lane) - 1u));
        __syncthreads();
        if (threadIdx.x < world)
            block_base[threadIdx.x] = block_count[threadIdx.x] ? atomicAdd(counts + threadIdx.x, block_count[threadIdx.x]) : 0u;
        __syncthreads();
        if (active) boxes[owner][block_base[owner] + place] = ((u64)i << 32) | local;
    }
}

// Owner side, shared by both kernels: requester q's count (read from its workspace) and output
// buffer; returns the largest count. `peers`: [world] counts pointers, then [world] out pointers.
__device__ __forceinline__ unsigned read_requests(const u64* __restrict__ peers, int world, int me,
                                                  unsigned* count, char** outs) {
    if (threadIdx.x < world) {
        count[threadIdx.x] = ((volatile const unsigned*)peers[threadIdx.x])[me];
        outs[threadIdx.x] = (char*)peers[world + threadIdx.x];
    }
    __syncthreads();
    unsigned most = 0;
    for (int q = 0; q < world; ++q) most = count[q] > most ? count[q] : most;
    return most;
}

// Slot s of the owner's work is request s / world of requester (s + me) % world: the requesters
// interleave, so the owner writes to every peer at once (and owners start on different peers),
// rather than every owner filling one requester's buffer at a time. Slots past a requester's
// count are skipped (an uneven split only costs empty slots).
//
// Work item = one V-sized vector of one row, as in the one-kernel gather: consecutive threads move
// consecutive vectors of a row (a warp writes 512 contiguous bytes of 16-byte vectors), UNROLL rows
// read from the local shard before their stores.
template <typename V>
__device__ __forceinline__ void push_rows(const u64* __restrict__ peers, int world, int me, unsigned cap,
                                          const u64* __restrict__ inbox, const char* __restrict__ shard,
                                          unsigned vecs_per_row, unsigned row_bytes) {
    __shared__ unsigned count[MAX_RANKS];
    __shared__ char* outs[MAX_RANKS];
    const unsigned most = read_requests(peers, world, me, count, outs);
    const unsigned n_items = most * (unsigned)world * vecs_per_row;
    const unsigned stride = gridDim.x * blockDim.x;
    for (unsigned base = blockIdx.x * blockDim.x + threadIdx.x; base < n_items; base += stride * UNROLL) {
        V vals[UNROLL];
        V* dst[UNROLL];
        #pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            dst[k] = 0;
            const unsigned item = base + k * stride;
            if (item < n_items) {
                const unsigned slot = item / vecs_per_row, v = item - slot * vecs_per_row;
                const unsigned q = (slot + me) % world, row = slot / world;
                if (row < count[q]) {
                    const u64 e = inbox[(u64)q * cap + row];
                    vals[k] = *(const V*)(shard + (u64)(unsigned)e * row_bytes + (u64)v * sizeof(V));
                    dst[k] = (V*)(outs[q] + (e >> 32) * row_bytes + (u64)v * sizeof(V));
                }
            }
        }
        #pragma unroll
        for (int k = 0; k < UNROLL; ++k)
            if (dst[k]) *dst[k] = vals[k];
    }
    __threadfence_system();        // this thread's remote stores performed before the barrier after us
}

#define PUSH_KERNEL(NAME, V)                                                                          \
    extern "C" __global__ void NAME(const u64* __restrict__ peers, int world, int me, unsigned cap,   \
                                    const u64* __restrict__ inbox, const char* __restrict__ shard,    \
                                    unsigned vecs_per_row, unsigned row_bytes) {                      \
        push_rows<V>(peers, world, me, cap, inbox, shard, vecs_per_row, row_bytes);                   \
    }

PUSH_KERNEL(push_rows_v16, uint4)
PUSH_KERNEL(push_rows_v8, uint2)
PUSH_KERNEL(push_rows_v4, unsigned int)
PUSH_KERNEL(push_rows_v2, unsigned short)

// The same slots, a warp per row: the warp copies the row from the local shard into one of its two
// shared-memory stages and lane 0 hands it to the bulk copy unit, which writes the whole row to the
// requester in one operation (larger write packets than a warp's 16-byte stores may make). A stage
// is refilled once the store that read it two rows earlier is done reading.
// Dynamic shared memory: warps x 2 x row_bytes.
extern "C" __global__ void push_rows_bulk(const u64* __restrict__ peers, int world, int me, unsigned cap,
                                          const u64* __restrict__ inbox, const char* __restrict__ shard,
                                          unsigned row_bytes) {
    DYN_SHARED(unsigned char, smem);
    __shared__ unsigned count[MAX_RANKS];
    __shared__ char* outs[MAX_RANKS];
    const unsigned most = read_requests(peers, world, me, count, outs);
    const unsigned warps = blockDim.x / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    unsigned char* buf = smem + (u64)warp * 2 * row_bytes;
    const unsigned slots = most * (unsigned)world, vecs = row_bytes / 16;
    unsigned used = 0;
    for (unsigned slot = blockIdx.x * warps + warp; slot < slots; slot += gridDim.x * warps) {
        const unsigned q = (slot + me) % world, row = slot / world;
        if (row >= count[q]) continue;                                            // warp-uniform
        const u64 e = inbox[(u64)q * cap + row];
        const uint4* src = (const uint4*)(shard + (u64)(unsigned)e * row_bytes);
        unsigned char* stage = buf + (used & 1u) * row_bytes;
        if (lane == 0) bulk_wait_read_1();
        __syncwarp();
        for (unsigned v = lane; v < vecs; v += 32) ((uint4*)stage)[v] = src[v];
        fence_async_shared();
        __syncwarp();
        if (lane == 0) {
            bulk_store(outs[q] + (e >> 32) * row_bytes, stage, row_bytes);
            bulk_commit();
        }
        ++used;
    }
    if (lane == 0) bulk_wait_all();
    __threadfence_system();
}
