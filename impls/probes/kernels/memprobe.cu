// Memory probes of WholeGraph Table I and XGNN Fig. 6.
//
// The address sequences below are mirrored bit for bit by impls/probes/chain.py (the
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

#define LINE_WORDS 16ULL

// A keyed bijection of [0, lines) (impls/probes/chain.py LinePermutation): three
// multiply-add-xorshift rounds on the smallest power-of-two domain holding the lines,
// cycle-walked back into range. 32-bit arithmetic: a few integer instructions a round.
struct LinePerm {
    unsigned int lines, mask, shift, k0, k1, k2;
};

__device__ __forceinline__ unsigned int perm_rounds(unsigned int x, const LinePerm& p) {
    x = (x * 0x9E3779B1u + p.k0) & p.mask;
    x ^= x >> p.shift;
    x = (x * 0x85EBCA6Bu + p.k1) & p.mask;
    x ^= x >> p.shift;
    x = (x * 0xC2B2AE35u + p.k2) & p.mask;
    return x ^ (x >> p.shift);
}

__device__ __forceinline__ unsigned int line_at(unsigned int index, const LinePerm& p) {
    unsigned int y = perm_rounds(index, p);
    while (y >= p.lines) y = perm_rounds(y, p);
    return y;
}

__device__ __forceinline__ LinePerm make_perm(unsigned int lines, u64 key) {
    LinePerm p;
    p.lines = lines;
    unsigned int bits = lines > 1 ? 32 - __clz(lines - 1) : 1;
    p.mask = bits >= 32 ? 0xFFFFFFFFu : ((1u << bits) - 1u);
    p.shift = (bits + 1) / 2;
    u64 k0 = mix64(key), k1 = mix64(k0), k2 = mix64(k1);
    p.k0 = (unsigned int)k0;
    p.k1 = (unsigned int)k1;
    p.k2 = (unsigned int)k2;
    return p;
}

// One thread, a dependent chain over a permutation of the lines: step s reads word h & 15
// of line line_at(s), where h hashes the value the previous step read, its step id and h,
// so no load can be issued before the previous one returns, and no line is read twice
// until the permutation wraps. Steps first_step .. first_step + steps - 1.
extern "C" __global__ void pointer_chase(const u64* const* __restrict__ table, int nparts,
                                         unsigned int part_lines, u64 key, u64 first_step,
                                         long long steps, u64 start, u64* __restrict__ out) {
    __shared__ const u64* parts[MAX_PARTS];
    if (threadIdx.x == 0) {
        for (int p = 0; p < nparts; ++p) parts[p] = table[p];
    }
    __syncthreads();
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    const unsigned int lines = (unsigned int)nparts * part_lines;
    const LinePerm perm = make_perm(lines, key);
    unsigned int index = (unsigned int)(first_step % lines);
    unsigned int g = line_at(index, perm);
    const u64* line = parts[g / part_lines] + (u64)(g % part_lines) * LINE_WORDS;
    u64 h = mix64(start);
    u64 value = 0;
    u64 s = first_step;
    for (long long j = 0; j < steps; ++j, ++s) {
        // volatile: the load must really go to memory every step
        value = *((const volatile u64*)(line + (h & (LINE_WORDS - 1))));
        // the next line does not depend on the value: computed while the load is in flight
        index = index + 1 == lines ? 0 : index + 1;
        g = line_at(index, perm);
        line = parts[g / part_lines] + (u64)(g % part_lines) * LINE_WORDS;
        h = mix64((value ^ h) + s);
    }
    out[0] = value;
    out[1] = h;
}

// Many threads, independent 8-byte reads: random-access bandwidth. Read r of thread t is
// index first + r * threads + t of the line permutation (at any moment the threads in flight
// read consecutive indices, so distinct lines), one hashed word of that line.
extern "C" __global__ void random_reads(const u64* const* __restrict__ table, int nparts,
                                        unsigned int part_lines, u64 key, u64 salt, u64 first,
                                        int reads_per_thread, u64* __restrict__ out) {
    __shared__ const u64* parts[MAX_PARTS];
    if (threadIdx.x < nparts) parts[threadIdx.x] = table[threadIdx.x];
    __syncthreads();
    const unsigned int lines = (unsigned int)nparts * part_lines;
    const LinePerm perm = make_perm(lines, key);
    const u64 threads = (u64)gridDim.x * blockDim.x;
    const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 acc = 0;
    #pragma unroll 4
    for (int r = 0; r < reads_per_thread; ++r) {
        u64 i = first + (u64)r * threads + tid;
        unsigned int g = line_at((unsigned int)(i % lines), perm);
        u64 w = mix64(i ^ salt) & (LINE_WORDS - 1);
        acc ^= __ldcg(parts[g / part_lines] + (u64)(g % part_lines) * LINE_WORDS + w);
    }
    out[tid] = acc;
}
