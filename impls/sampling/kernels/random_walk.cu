// PinSAGE neighbourhoods by random walks with restart (Ying et al. 2018, section 3.4; DGL's
// PinSAGESampler / RandomWalkNeighborSampler; XGNN 6.1: "each layer samples 5 neighbors by random
// walking from 4 paths of length 3"). Host side: impls/sampling/random_walk.py; the numba twin in
// impls/sampling/cpu.py (random_walk_topk) draws the same numbers and returns the same output.
//
// One thread per target b = seeds[b]. R walks of L steps each start at the target; the thread
// advances them in lockstep (step s of every walk, then step s + 1), so R independent row reads
// are in flight per thread. Step s of walk w uses draws j = 2 (s R + w) and j + 1 of position b:
//   the next node is neighbour uniform_below(key, b, j, deg) of the current node (a node without
//   neighbours ends the walk); the next node is a visit unless it is the target itself;
//   then the walk restarts at the target when rand32(key, b, j + 1) < restart_thr
//   (restart_thr = restart probability x 2^32; 0 never restarts).
// The visited nodes, ranked by visit count (ties: the earlier first visit first), give the top K:
// out[b K + k] and weight[b K + k] (the count), k < counts[b] = min(K, distinct visits), -1 / 0
// after. rows[b R L + s R + w] (optional) is the physical row step s of walk w read, -1 if none:
// the per-tier counters' input.
//
// Ids: walks move in store ids (a tiered store's hot order). The row of id v is read at physical
// index v < gpu_rows ? base[v % P] + v / P : v - gpu_rows + host_base (impls/storage/tiers.py
// TierLayout.physical); a plain CSR passes gpu_rows = 0 and host_base = 0 (the identity).

#include "common.cuh"

#define RW_MAX_WALKS 16
#define RW_MAX_VISITS 64

__device__ __forceinline__ long long walk_physical(long long v, const long long* __restrict__ base, long long P,
                                                   long long gpu_rows, long long host_base) {
    return v < gpu_rows ? base[v % P] + v / P : v - gpu_rows + host_base;
}

template <typename T>
__device__ __forceinline__ void random_walk_topk_impl(const long long* __restrict__ desc,
                                                      const long long* __restrict__ seeds, long long n, int R,
                                                      int L, u64 restart_thr, int K, u64 key,
                                                      const long long* __restrict__ base, long long P,
                                                      long long gpu_rows, long long host_base,
                                                      long long* __restrict__ out, float* __restrict__ weight,
                                                      long long* __restrict__ counts, long long* __restrict__ rows) {
    __shared__ long long sdesc[DESC_WORDS];
    const Graph g = load_graph(desc, sdesc);
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x; b < n; b += stride) {
        const long long target = seeds[b];
        long long cur[RW_MAX_WALKS];
        long long seen[RW_MAX_VISITS];
        int hits[RW_MAX_VISITS];
        int distinct = 0;
        for (int w = 0; w < R; ++w) cur[w] = target;
        for (int s = 0; s < L; ++s) {
            for (int w = 0; w < R; ++w) {
                const long long slot = b * (long long)(R * L) + (long long)(s * R + w);
                const long long v = cur[w];
                if (v < 0) {
                    if (rows != nullptr) rows[slot] = -1;
                    continue;
                }
                const long long p = walk_physical(v, base, P, gpu_rows, host_base);
                if (rows != nullptr) rows[slot] = p;
                long long start, deg;
                g.row(p, start, deg);
                if (deg == 0) {
                    cur[w] = -1;
                    continue;
                }
                const long long j = 2LL * (s * R + w);
                const long long next = (long long)g.index<T>(p, start + (long long)uniform_below(key, b, j, deg));
                if (next != target) {
                    int k = 0;
                    while (k < distinct && seen[k] != next) ++k;
                    if (k == distinct) {
                        seen[distinct] = next;
                        hits[distinct] = 0;
                        ++distinct;
                    }
                    ++hits[k];
                }
                cur[w] = ((u64)rand32(key, b, j + 1) < restart_thr) ? target : next;
            }
        }
        const int take = distinct < K ? distinct : K;
        for (int k = 0; k < K; ++k) {
            long long id = -1;
            float c = 0.0f;
            if (k < take) {
                int best = -1;
                for (int q = 0; q < distinct; ++q)
                    if (hits[q] > 0 && (best < 0 || hits[q] > hits[best])) best = q;
                id = seen[best];
                c = (float)hits[best];
                hits[best] = -hits[best];              // taken
            }
            out[b * K + k] = id;
            weight[b * K + k] = c;
        }
        counts[b] = take;
    }
}

#define WALK_KERNELS(SUFFIX, T)                                                                             \
    extern "C" __global__ void random_walk_topk_##SUFFIX(                                                    \
        const long long* __restrict__ desc, const long long* __restrict__ seeds, long long n, int R, int L,  \
        u64 restart_thr, int K, u64 key, const long long* __restrict__ base, long long P, long long gpu_rows, \
        long long host_base, long long* __restrict__ out, float* __restrict__ weight,                        \
        long long* __restrict__ counts, long long* __restrict__ rows) {                                      \
        random_walk_topk_impl<T>(desc, seeds, n, R, L, restart_thr, K, key, base, P, gpu_rows, host_base,    \
                                 out, weight, counts, rows);                                                 \
    }

WALK_KERNELS(i32, int)
WALK_KERNELS(i64, long long)
