// Append-unique through a direct-mapped id table (host side: impls/sampling/unique.py,
// DenseAppendUnique). When every id is below a bound N (a sampled hop of a graph of N nodes),
// the hash table of unique.cu can become an array indexed by the id itself: no hashing, no
// probing, no per-bucket ranking. Workspace, kept between calls:
//   slot[N]        u64 (call generation << 32) | (~local id): an entry of an earlier call's
//                  generation reads as empty, so no call has to reset the slots it wrote
//   bits[N/32]     u32, one bit per new node (a neighbor that is not a target); the scan that
//                  numbers them clears every word it reads
//   counts[C]      i32 new nodes per chunk of DM_CHUNK words (written whole by every call)
//   ctl[2][2]      i64 per call parity: new nodes (the host's read-back), ids out of bound
// A call of generation g uses the row of parity g & 1 and zeroes the other parity's, which the
// next call uses. New nodes are numbered in ascending id: the bitmap is scanned in chunks, one
// block per chunk, so the output equals the sort reference's (torch.unique). Five launches:
//   dm_mark_targets    thread per target: slot[t] = max(slot[t], (g, ~index)), so a repeated
//                      target keeps its first index; unique_out[i] = t; zeroes dup_count and the
//                      other parity's read-back words
//   dm_mark_neighbors  thread per neighbor (after the targets): a node whose slot is not of
//                      generation g is new: set its bit (read first, so a popular node costs one
//                      atomicOr)
//   dm_count           block per chunk: new nodes in the chunk (a count per chunk by atomics
//                      as bits are set would put every new node's atomic on a few L2 slices)
//   dm_assign          block per chunk: the chunks before it summed by the block (N / 32768
//                      of them: a few reads per thread, no host-side prefix sum), a block scan of
//                      the threads' bit counts; each set bit gets num_targets + the new nodes
//                      before it: slot[v] = (g, ~id), unique_out[id] = v; the words are cleared;
//                      block 0 writes the total beside the overflow count (one read-back)
//   dm_lookup          thread per neighbor: local id = ~slot[v]; dup_count[id] += 1
// An id at or above the bound counts an overflow instead of writing outside the workspace; the
// host raises on it (the next call's generation makes whatever was written stale).

#include "common.cuh"

#define DM_THREADS 256
#define DM_WORDS_PER_THREAD 4
#define DM_CHUNK (DM_THREADS * DM_WORDS_PER_THREAD)

__device__ __forceinline__ u64 dm_encode(u64 gen, u64 local) { return (gen << 32) | (u64)(0xffffffffu - (u32)local); }
__device__ __forceinline__ u32 dm_decode(u64 entry) { return 0xffffffffu - (u32)entry; }

extern "C" __global__ void dm_mark_targets(const long long* __restrict__ targets, long long nt, long long bound,
                                           unsigned long long gen, unsigned long long* slot,
                                           long long* __restrict__ unique_out, int* __restrict__ dup_count,
                                           long long cap, unsigned long long* ctl,
                                           unsigned long long* __restrict__ other_ctl) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long n = nt > cap ? nt : cap;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        if (i < cap) dup_count[i] = 0;
        if (i < 2) other_ctl[i] = 0;
        if (i >= nt) continue;
        const long long v = targets[i];
        unique_out[i] = v;
        if ((u64)v >= (u64)bound) {
            atomicAdd(&ctl[1], 1ull);
            continue;
        }
        atomicMax(&slot[v], dm_encode(gen, (u64)i));     // the first index of a repeated target
    }
}

extern "C" __global__ void dm_mark_neighbors(const long long* __restrict__ neighbors, long long nn, long long bound,
                                             unsigned long long gen, const unsigned long long* __restrict__ slot,
                                             u32* bits, unsigned long long* ctl) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < nn; j += stride) {
        const long long v = neighbors[j];
        if ((u64)v >= (u64)bound) {
            atomicAdd(&ctl[1], 1ull);
            continue;
        }
        if ((slot[v] >> 32) == gen) continue;               // a target
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

extern "C" __global__ void __launch_bounds__(DM_THREADS) dm_count(const u32* __restrict__ bits, long long words,
                                                                 long long nchunks, int* __restrict__ counts) {
    __shared__ int s[DM_THREADS];
    for (long long c = blockIdx.x; c < nchunks; c += gridDim.x) {
        const long long first = c * DM_CHUNK + (long long)threadIdx.x * DM_WORDS_PER_THREAD;
        int n = 0;
        for (int k = 0; k < DM_WORDS_PER_THREAD; ++k) n += first + k < words ? __popc(bits[first + k]) : 0;
        int total;
        dm_block_exclusive(n, s, &total);
        if (threadIdx.x == 0) counts[c] = total;
    }
}

// Sum of counts[0, end) by the whole block.
__device__ __forceinline__ long long dm_block_sum(const int* __restrict__ counts, long long end, int* s) {
    long long mine = 0;
    for (long long k = threadIdx.x; k < end; k += DM_THREADS) mine += counts[k];
    int total;
    dm_block_exclusive((int)mine, s, &total);      // fits: the sum is at most the bound (< 2^31)
    return total;
}

extern "C" __global__ void __launch_bounds__(DM_THREADS) dm_assign(
        u32* bits, long long words, long long nchunks, const int* __restrict__ counts, long long nt,
        unsigned long long gen, unsigned long long* __restrict__ slot, long long* __restrict__ unique_out,
        unsigned long long* ctl) {
    __shared__ int s[DM_THREADS];
    if (blockIdx.x == 0) {                          // what the host reads back, beside the overflow count
        const long long all = dm_block_sum(counts, nchunks, s);
        if (threadIdx.x == 0) ctl[0] = (u64)all;
    }
    for (long long c = blockIdx.x; c < nchunks; c += gridDim.x) {
        const long long earlier = dm_block_sum(counts, c, s);
        const long long first = c * DM_CHUNK + (long long)threadIdx.x * DM_WORDS_PER_THREAD;
        u32 w[DM_WORDS_PER_THREAD];
        int n = 0;
        for (int k = 0; k < DM_WORDS_PER_THREAD; ++k) {
            w[k] = first + k < words ? bits[first + k] : 0u;
            if (w[k]) bits[first + k] = 0u;                  // clean for the next call
            n += __popc(w[k]);
        }
        int total;
        const int before = dm_block_exclusive(n, s, &total);
        long long id = nt + earlier + before;
        for (int k = 0; k < DM_WORDS_PER_THREAD; ++k) {
            for (u32 m = w[k]; m; m &= m - 1) {
                const long long v = ((first + k) << 5) + (__ffs(m) - 1);
                slot[v] = dm_encode(gen, (u64)id);
                unique_out[id] = v;
                ++id;
            }
        }
    }
}

extern "C" __global__ void dm_lookup(const long long* __restrict__ neighbors, long long nn,
                                     const unsigned long long* __restrict__ slot, long long* __restrict__ local,
                                     int* __restrict__ dup_count, const unsigned long long* __restrict__ ctl) {
    if (ctl[1]) return;      // an id past the bound has no slot
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < nn; j += stride) {
        const u32 id = dm_decode(slot[neighbors[j]]);
        local[j] = (long long)id;
        atomicAdd(&dup_count[id], 1);
    }
}
