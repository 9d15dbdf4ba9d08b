// Memory probes of WholeGraph Table I and XGNN Fig. 6.
//
// The chained hash below is mirrored bit for bit by impls/probes/chain.py (the
// reference the tests compare against) and impls/probes/host.py (the CPU probe).
// Memory is a set of `nparts` equal parts of `part_elems` 64-bit words, reached
// through a pointer table, so local, peer (P2P), managed and pinned-host memory
// all run the same instruction stream.

#define MAX_PARTS 16

typedef unsigned long long u64;

__device__ __forceinline__ u64 mix64(u64 z) {
    // splitmix64 finalizer: every output bit depends on every input bit
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// Fill words [begin, end) of the global index space with mix64(index ^ salt).
extern "C" __global__ void fill_words(u64* __restrict__ part, u64 first_index, u64 count, u64 salt) {
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        part[i] = mix64((first_index + i) ^ salt);
    }
}

// One thread, a dependent chain: the next address is a hash of the value just
// read and the step id, so no load can be issued before the previous one returns.
extern "C" __global__ void pointer_chase(const u64* const* __restrict__ table, int nparts,
                                         u64 part_elems, u64 start, long long steps,
                                         u64* __restrict__ out) {
    __shared__ const u64* parts[MAX_PARTS];
    if (threadIdx.x == 0) {
        for (int p = 0; p < nparts; ++p) parts[p] = table[p];
    }
    __syncthreads();
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    u64 h = mix64(start);
    u64 value = 0;
    for (long long s = 0; s < steps; ++s) {
        unsigned int p = (unsigned int)h % (unsigned int)nparts;
        u64 offset = __umul64hi(h, part_elems);
        // volatile: the load must really go to memory every step
        value = *((const volatile u64*)(parts[p] + offset));
        h = mix64(value + (u64)s);
    }
    out[0] = value;
    out[1] = h;
}

// Many threads, independent random 8-byte reads: random-access bandwidth.
extern "C" __global__ void random_reads(const u64* const* __restrict__ table, int nparts,
                                        u64 part_elems, u64 salt, int reads_per_thread,
                                        u64* __restrict__ out) {
    __shared__ const u64* parts[MAX_PARTS];
    if (threadIdx.x < nparts) parts[threadIdx.x] = table[threadIdx.x];
    __syncthreads();
    u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 acc = 0;
    #pragma unroll 4
    for (int r = 0; r < reads_per_thread; ++r) {
        u64 h = mix64(salt ^ (tid * (u64)reads_per_thread + (u64)r));
        unsigned int p = (unsigned int)h % (unsigned int)nparts;
        acc ^= __ldcg(parts[p] + __umul64hi(h, part_elems));
    }
    out[tid] = acc;
}
