// Append-unique through a direct-mapped id table (host side: impls/sampling/unique.py,
// DenseAppendUnique). When every id is below a bound N (a sampled hop of a graph of N nodes),
// the hash table of unique.cu can become an array indexed by the id itself: no hashing, no
// probing, no per-bucket ranking. Workspace, kept between calls and left clean by each call:
//   slot[N]   u32, EMPTY when untouched; a target's index, then a new node's local id
//   bits[N/32] u32, one bit per new node (a neighbor that is not a target)
// New nodes are numbered in ascending id: the bitmap is scanned in chunks of DM_CHUNK words,
// one block per chunk, so the output equals the sort reference's (torch.unique) exactly.
//   dm_mark_targets    thread per target: slot[t] = min(slot[t], index); unique_out[i] = t
//   dm_mark_neighbors  thread per neighbor (after the targets): a node with an EMPTY slot is new:
//                      set its bit (read first, so a popular node costs one atomicOr)
//   dm_count           block per chunk: new nodes in the chunk
//   dm_assign          block per chunk: the chunks before it summed by the block (there are
//                      N / 32768 chunks: a few reads per thread, and no host-side prefix sum), a
//                      block scan of the threads' bit counts; each set bit gets num_targets + the
//                      new nodes before it; slot[v] = id; unique_out[id] = v; block 0 writes the
//                      new-node and overflow counts to `tail` (the host's one read-back)
//   dm_lookup          thread per neighbor: local id = slot[v]; dup_count[id] += 1
//   dm_reset           thread per output node: slot[v] = EMPTY, its bitmap word = 0
// An id at or above the bound counts an overflow instead of writing outside the workspace; the
// host raises on it after dm_reset has cleaned up.

#include "common.cuh"

#define DM_EMPTY 0xffffffffu
#define DM_THREADS 256
#define DM_WORDS_PER_THREAD 4
#define DM_CHUNK (DM_THREADS * DM_WORDS_PER_THREAD)

extern "C" __global__ void dm_mark_targets(const long long* __restrict__ targets, long long nt, long long bound,
                                           u32* slot, long long* __restrict__ unique_out, int* overflow) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < nt; i += stride) {
        const long long v = targets[i];
        unique_out[i] = v;
        if ((u64)v >= (u64)bound) {
            atomicAdd(overflow, 1);
            continue;
        }
        atomicMin(&slot[v], (u32)i);       // a repeated target keeps its first index
    }
}

extern "C" __global__ void dm_mark_neighbors(const long long* __restrict__ neighbors, long long nn, long long bound,
                                             const u32* __restrict__ slot, u32* bits, int* overflow) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < nn; j += stride) {
        const long long v = neighbors[j];
        if ((u64)v >= (u64)bound) {
            atomicAdd(overflow, 1);
            continue;
        }
        if (slot[v] != DM_EMPTY) continue;                  // a target
        const u32 m = 1u << (v & 31);
        u32* word = &bits[v >> 5];
        if (!(((volatile u32*)word)[0] & m)) atomicOr(word, m);
    }
}

// Exclusive prefix of x over the block's DM_THREADS threads (Hillis-Steele in shared memory);
// *total gets the block's sum. Every thread of the block must call it.
__device__ __forceinline__ int dm_block_exclusive(int x, int* s, int* total) {
    const int t = threadIdx.x;
    s[t] = x;
    __syncthreads();
    for (int off = 1; off < DM_THREADS; off <<= 1) {
        const int y = t >= off ? s[t - off] : 0;
        __syncthreads();
        s[t] += y;
        __syncthreads();
    }
    const int inclusive = s[t];
    *total = s[DM_THREADS - 1];
    __syncthreads();                                          // s is reused by the next chunk
    return inclusive - x;
}

__device__ __forceinline__ void dm_load_words(const u32* __restrict__ bits, long long words, long long first,
                                              u32* w) {
    for (int k = 0; k < DM_WORDS_PER_THREAD; ++k) w[k] = first + k < words ? bits[first + k] : 0u;
}

extern "C" __global__ void __launch_bounds__(DM_THREADS) dm_count(const u32* __restrict__ bits, long long words,
                                                                 long long nchunks, int* __restrict__ chunk_counts) {
    __shared__ int s[DM_THREADS];
    for (long long c = blockIdx.x; c < nchunks; c += gridDim.x) {
        u32 w[DM_WORDS_PER_THREAD];
        dm_load_words(bits, words, c * DM_CHUNK + (long long)threadIdx.x * DM_WORDS_PER_THREAD, w);
        int n = 0;
        for (int k = 0; k < DM_WORDS_PER_THREAD; ++k) n += __popc(w[k]);
        int total;
        dm_block_exclusive(n, s, &total);
        if (threadIdx.x == 0) chunk_counts[c] = total;
    }
}

// Sum of chunk_counts[0, end) by the whole block.
__device__ __forceinline__ long long dm_block_sum(const int* __restrict__ chunk_counts, long long end, int* s) {
    long long mine = 0;
    for (long long k = threadIdx.x; k < end; k += DM_THREADS) mine += chunk_counts[k];
    int total;
    dm_block_exclusive((int)mine, s, &total);      // fits: the sum is at most the bound (< 2^31)
    return total;
}

extern "C" __global__ void __launch_bounds__(DM_THREADS) dm_assign(
        const u32* __restrict__ bits, long long words, long long nchunks, const int* __restrict__ chunk_counts,
        long long nt, u32* __restrict__ slot, long long* __restrict__ unique_out, const int* __restrict__ overflow,
        long long* __restrict__ tail) {
    __shared__ int s[DM_THREADS];
    if (blockIdx.x == 0) {                          // what the host reads back, in one copy
        const long long all = dm_block_sum(chunk_counts, nchunks, s);
        if (threadIdx.x == 0) {
            tail[0] = all;
            tail[1] = *overflow;
        }
    }
    for (long long c = blockIdx.x; c < nchunks; c += gridDim.x) {
        const long long earlier = dm_block_sum(chunk_counts, c, s);
        const long long first = c * DM_CHUNK + (long long)threadIdx.x * DM_WORDS_PER_THREAD;
        u32 w[DM_WORDS_PER_THREAD];
        dm_load_words(bits, words, first, w);
        int n = 0;
        for (int k = 0; k < DM_WORDS_PER_THREAD; ++k) n += __popc(w[k]);
        int total;
        const int before = dm_block_exclusive(n, s, &total);
        long long id = nt + earlier + before;
        for (int k = 0; k < DM_WORDS_PER_THREAD; ++k) {
            for (u32 m = w[k]; m; m &= m - 1) {
                const long long v = ((first + k) << 5) + (__ffs(m) - 1);
                slot[v] = (u32)id;
                unique_out[id] = v;
                ++id;
            }
        }
    }
}

extern "C" __global__ void dm_lookup(const long long* __restrict__ neighbors, long long nn,
                                     const u32* __restrict__ slot, long long* __restrict__ local,
                                     int* __restrict__ dup_count, const int* __restrict__ overflow) {
    if (*overflow) return;      // an id past the bound has no slot
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < nn; j += stride) {
        const u32 id = slot[neighbors[j]];
        local[j] = (long long)id;
        atomicAdd(&dup_count[id], 1);
    }
}

extern "C" __global__ void dm_reset(const long long* __restrict__ unique_out, long long nt,
                                    const long long* __restrict__ tail, long long bound, u32* slot, u32* bits) {
    const long long n = nt + tail[0];
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {
        const long long v = unique_out[k];
        if ((u64)v >= (u64)bound) continue;
        slot[v] = DM_EMPTY;
        bits[v >> 5] = 0u;
    }
}
