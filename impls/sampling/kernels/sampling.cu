// Neighbor sampling kernels: WholeGraph Algorithm 1 (path doubling), the reservoir
// baseline ("original KHop") and XGNN's batched KHop. Host side: impls/sampling/samplers.py through impls/core/kernels.py.
//
// Every kernel writes the neighbors of batch position b at out[offsets[b] ...], where
// offsets is the exclusive prefix sum of min(degree, fanout) (row_counts + torch.cumsum).
// Outer loops stride over seeds by block, so trip counts are uniform within a block
// (required by __syncthreads and the full-warp intrinsics of count_request).

#include "common.cuh"

// counts[0] = 0, counts[b + 1] = min(degree(seeds[b]), fanout)
extern "C" __global__ void row_counts(const long long* __restrict__ desc, const long long* __restrict__ seeds,
                                      long long n, int fanout, long long* __restrict__ counts) {
    __shared__ long long sdesc[DESC_WORDS];
    const Graph g = load_graph(desc, sdesc);
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x; b < n; b += stride) {
        long long start, deg;
        g.row(seeds[b], start, deg);
        counts[b + 1] = deg < fanout ? deg : (long long)fanout;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) counts[0] = 0;
}

// ---------------------------------------------------------------------------------------
// WholeGraph Algorithm 1. A group of G = next_pow2(M) threads (M = fanout) handles one
// target node: thread i of the group plays index i of Algorithm 1. Per group, shared memory
// holds the packed keys (r[i] << 32 | i), sorted in place (s = high word, p = low word),
// and chain[M]. q[i] (the sorted position of draw i) stays in thread i's register.
//   lines 1-4  r[i] = random(N - 1 - i) (uniform in [0, N - 1 - i]); chain[i] = i
//   line 5     one sort of the packed 64-bit keys: rank of key i = #keys smaller (keys are
//              distinct because the low word is the index), then key i -> position q[i]
//   lines 6-11 thread at sorted position k: if k is the last of its run of equal values and
//              s[k] >= N - M: chain[N - s[k] - 1] = p[k]
//   line 12    path doubling: ceil(log2 M) rounds of chain[i] = chain[chain[i]]
//   lines 13-22 res[i] = r[i] if draw i is the first of its value in sorted order, else
//              last[p[q[i] - 1]] with last[j] = N - chain[j] - 1
// res[i] are distinct positions in [0, N): the partial Fisher-Yates shuffle the draws
// describe. A target with N <= M takes all N neighbors (thread i outputs position i).
template <typename T>
__device__ __forceinline__ void path_doubling_impl(const long long* __restrict__ desc,
                                                   const long long* __restrict__ seeds, long long n,
                                                   int M, int G, u64 key,
                                                   const long long* __restrict__ offsets,
                                                   long long* __restrict__ out) {
    __shared__ long long sdesc[DESC_WORDS];
    const Graph g = load_graph(desc, sdesc);
    DYN_SHARED(u64, smem);
    u64* skey = smem;                              // blockDim.x packed keys
    int* chain = (int*)(smem + blockDim.x);        // blockDim.x chain entries
    const int tid = threadIdx.x;
    const int i = tid & (G - 1);                   // index within the group
    const int gbase = tid - i;
    const int gpb = blockDim.x / G;
    int rounds = 0;
    while ((1 << rounds) < M) ++rounds;
    for (long long first = (long long)blockIdx.x * gpb; first < n; first += (long long)gridDim.x * gpb) {
        const long long b = first + tid / G;
        const bool active = b < n;
        long long v = 0, start = 0, N = 0, o = 0;
        if (active) {
            v = seeds[b];
            g.row(v, start, N);
            o = offsets[b];
        }
        count_row_lookup(g, active, v, i);
        const bool sample = active && N > M;
        const bool mine = sample && i < M;
        u32 r = 0;
        if (mine) {                                                    // lines 1-4
            r = uniform_below(key, b, i, N - i);
            skey[tid] = ((u64)r << 32) | (u64)i;
            chain[tid] = i;
        }
        __syncthreads();
        int q = 0;                                                     // line 5: rank sort
        if (mine) {
            const u64 k = skey[tid];
            for (int j = 0; j < M; ++j) q += skey[gbase + j] < k;
        }
        __syncthreads();
        if (mine) skey[gbase + q] = ((u64)r << 32) | (u64)i;
        __syncthreads();
        if (mine) {                                                    // lines 6-11 (k = i)
            const u64 sk = skey[tid];
            const long long s = (long long)(sk >> 32);
            const bool last = (i == M - 1) || ((long long)(skey[tid + 1] >> 32) != s);
            if (last && s >= N - M) chain[gbase + (int)(N - s - 1)] = (int)(sk & 0xffffffffULL);
        }
        __syncthreads();
        for (int round = 0; round < rounds; ++round) {                 // line 12: path doubling
            int c = 0;
            if (mine) c = chain[gbase + chain[tid]];
            __syncthreads();
            if (mine) chain[tid] = c;
            __syncthreads();
        }
        bool reading = false;                                          // lines 13-22
        long long e = 0;
        if (mine) {
            long long res = r;
            if (q > 0 && (u32)(skey[gbase + q - 1] >> 32) == r) {
                const int pj = (int)(skey[gbase + q - 1] & 0xffffffffULL);
                res = N - (long long)chain[gbase + pj] - 1;            // last[p[q[i] - 1]]
            }
            reading = true;
            e = start + res;
        } else if (active && !sample && i < N) {
            reading = true;
            e = start + i;
        }
        T id = 0;
        if (reading) id = g.index<T>(v, e);
        if (g.counting()) {
            const bool rem = reading && g.remote(v);
            count_request(g, reading, rem, reading ? g.index_sector(v, e, (int)sizeof(T)) : 0, true, (int)sizeof(T));
        }
        if (reading) out[o + i] = (long long)id;
        __syncthreads();                                               // shared arrays are reused
    }
}

// ---------------------------------------------------------------------------------------
// Reservoir sampling, one thread per target: the "original KHop" XGNN improves on (the
// GNNLab/TSOTA kernel). The first M positions fill the reservoir; position j >= M replaces
// slot k = random(j + 1) when k < M, reading the id at that moment. Every read is a
// separate request of one thread (counted as one sector each); counted per thread.
template <typename T>
__device__ __forceinline__ void reservoir_impl(const long long* __restrict__ desc,
                                               const long long* __restrict__ seeds, long long n, int M,
                                               u64 key, const long long* __restrict__ offsets,
                                               long long* __restrict__ out) {
    __shared__ long long sdesc[DESC_WORDS];
    const Graph g = load_graph(desc, sdesc);
    const bool counting = g.counting();
    u64 rem_reads = 0, all_reads = 0, rem_idx = 0, all_idx = 0;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x; b < n; b += stride) {
        const long long v = seeds[b];
        long long start, N;
        g.row(v, start, N);
        const long long o = offsets[b];
        u64 reads = 0;
        if (N <= M) {
            for (long long j = 0; j < N; ++j) out[o + j] = (long long)g.index<T>(v, start + j);
            reads = (u64)N;
        } else {
            for (int j = 0; j < M; ++j) out[o + j] = (long long)g.index<T>(v, start + j);
            reads = (u64)M;
            for (long long j = M; j < N; ++j) {
                const u32 k = uniform_below(key, b, j, j + 1);
                if (k < (u32)M) {
                    out[o + k] = (long long)g.index<T>(v, start + j);
                    ++reads;
                }
            }
        }
        if (counting) {
            const bool rem = g.remote(v);
            all_reads += 2;                       // indptr[v], indptr[v + 1]: two requests
            all_idx += reads;
            if (rem) {
                rem_reads += 2;
                rem_idx += reads;
            }
        }
    }
    if (counting && (all_reads || all_idx)) {
        u64* c = g.counters();
        atomicAdd(&c[0], rem_reads + rem_idx);
        atomicAdd(&c[1], rem_reads * 8ULL + rem_idx * (u64)sizeof(T));
        atomicAdd(&c[2], all_reads + all_idx);
        atomicAdd(&c[3], all_reads * 8ULL + all_idx * (u64)sizeof(T));
    }
}

// ---------------------------------------------------------------------------------------
// XGNN's batched KHop (paper Fig. 5, lines 9-18). A group of G = min(32, next_pow2(M))
// lanes of one warp handles one target. Random positions random() % N are drawn in rounds
// of G (draw j = round * G + lane) and de-duplicated in a per-target hash set in shared
// memory; the first min(N, M) distinct positions in draw order are kept (a draw already in
// the set, or equal to a lower lane's draw of the same round, is dropped). The kept
// positions are sorted and then read in batched requests: lane k of the group reads
// position k, k + G, ... so a warp's request covers consecutive addresses of each list and
// the memory system coalesces them. N <= M reads the whole list the same way.
// Shared memory per group: hash slots H (pow2 >= 2M) + kept[M] + sorted[M] (u32 each).
template <typename T>
__device__ __forceinline__ void khop_batched_impl(const long long* __restrict__ desc,
                                                  const long long* __restrict__ seeds, long long n,
                                                  int M, int G, int H, u64 key,
                                                  const long long* __restrict__ offsets,
                                                  long long* __restrict__ out) {
    __shared__ long long sdesc[DESC_WORDS];
    const Graph g = load_graph(desc, sdesc);
    DYN_SHARED(u32, smem);
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int lg = tid & (G - 1);
    const int gid = tid / G;
    const int gpb = blockDim.x / G;
    u32* table = smem + (size_t)gid * (H + 2 * M);
    u32* kept = table + H;
    u32* sorted = kept + M;
    const u32 group_mask = (G == 32) ? FULL_MASK : (((1u << G) - 1u) << (lane & ~(G - 1)));
    const u32 below = (1u << lane) - 1u;
    int hbits = 0;
    while ((1 << hbits) < H) ++hbits;
    for (long long first = (long long)blockIdx.x * gpb; first < n; first += (long long)gridDim.x * gpb) {
        const long long b = first + gid;
        const bool active = b < n;
        long long v = 0, start = 0, N = 0, o = 0;
        if (active) {
            v = seeds[b];
            g.row(v, start, N);
            o = offsets[b];
        }
        count_row_lookup(g, active, v, lg);
        const bool sample = active && N > M;
        const int want = active ? (int)(N < M ? N : M) : 0;
        if (sample)
            for (int s = lg; s < H; s += G) table[s] = 0xffffffffu;
        __syncwarp();
        int count = 0;
        long long round = 0;
        while (__any_sync(FULL_MASK, sample && count < want)) {
            const bool drawing = sample && count < want;
            u32 c = 0;
            bool fresh = false;
            if (drawing) {
                c = uniform_below(key, b, round * G + lg, N);
                fresh = true;
                for (u32 s = (c * 0x9E3779B1u) >> (32 - hbits);; s = (s + 1) & (H - 1)) {
                    const u32 t = table[s];
                    if (t == c) { fresh = false; break; }
                    if (t == 0xffffffffu) break;
                }
            }
            const u64 mkey = fresh ? (((u64)gid << 32) | c) : (~0ULL - (u64)lane);
            const u32 same = __match_any_sync(FULL_MASK, mkey);
            const bool first_of_round = fresh && (__ffs(same) - 1 == lane);
            const u32 ok = __ballot_sync(FULL_MASK, first_of_round) & group_mask;
            const int rank = __popc(ok & below);
            if (first_of_round && count + rank < want) {
                kept[count + rank] = c;
                for (u32 s = (c * 0x9E3779B1u) >> (32 - hbits);; s = (s + 1) & (H - 1))
                    if (atomicCAS(&table[s], 0xffffffffu, c) == 0xffffffffu) break;
            }
            const int added = __popc(ok);
            count = (count + added < want) ? count + added : want;
            ++round;
            __syncwarp();
        }
        if (sample) {                                  // sort the kept positions (rank sort)
            for (int k = lg; k < want; k += G) {
                const u32 x = kept[k];
                int rk = 0;
                for (int j = 0; j < want; ++j) rk += kept[j] < x;
                sorted[rk] = x;
            }
        }
        __syncwarp();
        for (int base = 0; base < M; base += G) {      // batched, coalesced requests
            const int k = base + lg;
            const bool reading = active && k < want;
            long long e = 0;
            T id = 0;
            if (reading) {
                e = start + (sample ? (long long)sorted[k] : (long long)k);
                id = g.index<T>(v, e);
            }
            if (g.counting()) {
                const bool rem = reading && g.remote(v);
                count_request(g, reading, rem, reading ? g.index_sector(v, e, (int)sizeof(T)) : 0, true, (int)sizeof(T));
            }
            if (reading) out[o + k] = (long long)id;
        }
        __syncwarp();
    }
}

#define SAMPLING_KERNELS(SUFFIX, T)                                                                     \
    extern "C" __global__ void path_doubling_##SUFFIX(const long long* __restrict__ desc,               \
                                                      const long long* __restrict__ seeds, long long n, \
                                                      int M, int G, u64 key,                            \
                                                      const long long* __restrict__ offsets,            \
                                                      long long* __restrict__ out) {                    \
        path_doubling_impl<T>(desc, seeds, n, M, G, key, offsets, out);                                 \
    }                                                                                                   \
    extern "C" __global__ void reservoir_##SUFFIX(const long long* __restrict__ desc,                   \
                                                  const long long* __restrict__ seeds, long long n,     \
                                                  int M, u64 key, const long long* __restrict__ offsets, \
                                                  long long* __restrict__ out) {                        \
        reservoir_impl<T>(desc, seeds, n, M, key, offsets, out);                                        \
    }                                                                                                   \
    extern "C" __global__ void khop_batched_##SUFFIX(const long long* __restrict__ desc,                \
                                                     const long long* __restrict__ seeds, long long n,  \
                                                     int M, int G, int H, u64 key,                      \
                                                     const long long* __restrict__ offsets,             \
                                                     long long* __restrict__ out) {                     \
        khop_batched_impl<T>(desc, seeds, n, M, G, H, key, offsets, out);                               \
    }

SAMPLING_KERNELS(i32, int)
SAMPLING_KERNELS(i64, long long)
