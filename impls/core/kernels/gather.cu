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

#define MAX_PARTS 16
#ifndef UNROLL   // loads in flight per thread; the host may compile other values (-DUNROLL=n)
#define UNROLL 4
#endif

typedef unsigned long long u64;

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
                vals[k] = *(const V*)(parts[part] + (u64)local * row_bytes + (u64)v * sizeof(V));
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
