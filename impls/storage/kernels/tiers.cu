// GGMS / tiered-store address translation and per-tier access counting, one launch each
// (host side: impls/storage/tiers.py TierLayout.physical, impls/storage/tiered.py TierCounters).
// The torch expressions they replace take five and about a dozen launches per call; a mini-batch
// makes four such calls (three hops and the features), which made XGNN's sampler launch-bound.
//
// Tiers as in tiers.py: 0 = local GPU, 1 = remote GPU, 2 = host.

#include "common.cuh"

// out[i] = base[id % P] + id / P for hot ids (id < gpu_rows), id - gpu_rows + host_base otherwise.
extern "C" __global__ void tier_physical(const long long* __restrict__ ids, long long n,
                                         const long long* __restrict__ base, long long num_parts,
                                         long long gpu_rows, long long host_base,
                                         long long* __restrict__ out) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const long long id = ids[i];
        out[i] = id < gpu_rows ? base[id % num_parts] + id / num_parts : id - gpu_rows + host_base;
    }
}

// Accesses and bytes per tier of the physical rows ``index`` read by ``worker``: a row is on the
// host from host_base on, else on GPU index / rows_per_gpu (rows_per_gpu 0: everything on the
// host). Bytes per access: const_bytes, plus per_item_bytes x (offsets[i + 1] - offsets[i]) when
// offsets is given (a neighbor list's length). Negative indices (no read) are skipped. Block-level sums in shared memory, then six
// global atomics per block into acc[3] and bytes[3].
extern "C" __global__ void tier_count(const long long* __restrict__ index, long long n,
                                      const long long* __restrict__ offsets, long long const_bytes,
                                      long long per_item_bytes, long long rows_per_gpu, long long host_base,
                                      long long worker, unsigned long long* acc, unsigned long long* bytes) {
    __shared__ unsigned long long s_acc[3];
    __shared__ unsigned long long s_bytes[3];
    if (threadIdx.x < 3) {
        s_acc[threadIdx.x] = 0;
        s_bytes[threadIdx.x] = 0;
    }
    __syncthreads();
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const long long r = index[i];
        if (r < 0) continue;
        int tier = 2;
        if (r < host_base && rows_per_gpu > 0) tier = (r / rows_per_gpu == worker) ? 0 : 1;
        long long b = const_bytes;
        if (offsets != nullptr) b += per_item_bytes * (offsets[i + 1] - offsets[i]);
        atomicAdd(&s_acc[tier], 1ULL);
        atomicAdd(&s_bytes[tier], (unsigned long long)b);
    }
    __syncthreads();
    if (threadIdx.x < 3) {
        if (s_acc[threadIdx.x]) atomicAdd(&acc[threadIdx.x], s_acc[threadIdx.x]);
        if (s_bytes[threadIdx.x]) atomicAdd(&bytes[threadIdx.x], s_bytes[threadIdx.x]);
    }
}
