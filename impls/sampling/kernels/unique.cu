// WholeGraph's append-unique (SC'22 section III-C-2, Fig. 5) as three kernels around one
// torch.cumsum. Host side: impls/sampling/unique.py.
//
// Hash table: H = 2^k slots (H >= 2 (targets + neighbors)), open addressing with linear
// probing from the home slot h(key) = mix64(key) & (H - 1); keys (node ids >= 0) are
// inserted with atomicCAS on an all-ones EMPTY key. The value of a slot is the target
// index for target nodes (atomicMin, so a repeated target keeps its first index) and
// all-ones ("-1" in Fig. 5) for nodes that are only neighbors.
//
// Buckets: 32 consecutive slots. Fig. 5 counts the -1 values per bucket, takes an
// exclusive prefix sum over buckets and numbers new nodes from the bucket's start plus
// the number of targets. A node is counted in the bucket of its HOME slot (not the slot
// it landed in), and within a bucket new nodes are numbered by (home slot, node id), so the
// numbering depends only on the set of nodes and H, never on the order in which threads
// won their atomicCAS: the output is deterministic, and equal to the CPU version's.
//   au_insert   thread per input: insert; bucket_counts[bucket(home)] += 1 for each new key,
//               -= 1 when a target claims the key; targets copy themselves to unique[t];
//               neighbors remember their slot; a full table (more distinct ids than the
//               caller's id_bound allowed) counts an overflow, which the host raises
//   (host)      inclusive = torch.cumsum(bucket_counts)
//   au_assign   thread per slot: targets take their index; a new node takes
//               num_targets + (inclusive[b] - counts[b]) + rank within bucket b, where rank
//               counts the new nodes homed in b with smaller (home, id), found by walking the
//               slots from the bucket's first slot to the first empty slot past its end
//               (linear probing keeps every key between its home and the next empty slot).
//               (A warp-per-bucket variant that ranked by shuffles was not faster on an H200
//               at load 1/2: 143 vs 129 us per call.) It also copies the new-node
//               and overflow counts to `tail`, the one host read-back.
//   au_lookup   thread per neighbor: local id of its slot; dup_count[local id] += 1

#include "common.cuh"

#define EMPTY_KEY 0xffffffffffffffffULL
#define NOT_TARGET 0xffffffffu

__device__ __forceinline__ u64 home_slot(u64 key, u64 mask) { return mix64(key) & mask; }

extern "C" __global__ void au_insert(const long long* __restrict__ targets, long long nt,
                                     const long long* __restrict__ neighbors, long long nn,
                                     u64* keys, u32* vals, int* bucket_counts, u64 mask,
                                     long long* __restrict__ unique_out, long long* __restrict__ slot_out,
                                     int* overflow) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < nt + nn; i += stride) {
        const bool is_target = i < nt;
        const u64 key = (u64)(is_target ? targets[i] : neighbors[i - nt]);
        const u64 h = home_slot(key, mask);
        u64 s = h;
        bool placed = false;
        // A full table (more distinct ids than the caller's id_bound promised) ends the probe
        // after one lap instead of spinning; the host raises on the overflow count.
        for (u64 step = 0; step <= mask; ++step, s = (s + 1) & mask) {
            const u64 cur = ((volatile u64*)keys)[s];
            if (cur == key) { placed = true; break; }
            if (cur == EMPTY_KEY) {
                const u64 prev = atomicCAS(&keys[s], EMPTY_KEY, key);
                if (prev == EMPTY_KEY) {
                    atomicAdd(&bucket_counts[h >> 5], 1);
                    placed = true;
                    break;
                }
                if (prev == key) { placed = true; break; }
            }
        }
        if (!placed) {
            atomicAdd(overflow, 1);
            continue;
        }
        if (is_target) {
            unique_out[i] = (long long)key;
            const u32 old = atomicMin(&vals[s], (u32)i);
            if (old == NOT_TARGET) atomicAdd(&bucket_counts[h >> 5], -1);
        } else {
            slot_out[i - nt] = (long long)s;
        }
    }
}

extern "C" __global__ void au_assign(const u64* __restrict__ keys, const u32* __restrict__ vals,
                                     const int* __restrict__ bucket_counts,
                                     const long long* __restrict__ inclusive, u64 mask, long long nt,
                                     int* __restrict__ ids, long long* __restrict__ unique_out,
                                     const int* __restrict__ overflow, long long* __restrict__ tail) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {      // what the host reads back, in one copy
        tail[0] = inclusive[(mask >> 5)];            // the last bucket's inclusive count: new nodes
        tail[1] = *overflow;
    }
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long s = (long long)blockIdx.x * blockDim.x + threadIdx.x; s <= (long long)mask; s += stride) {
        const u64 key = keys[s];
        if (key == EMPTY_KEY) continue;
        const u32 val = vals[s];
        if (val != NOT_TARGET) {
            ids[s] = (int)val;
            continue;
        }
        const u64 h = home_slot(key, mask);
        const u64 b = h >> 5;
        long long rank = 0;
        for (u64 step = 0; step <= mask; ++step) {
            const u64 t = ((b << 5) + step) & mask;
            const u64 k2 = keys[t];
            if (k2 == EMPTY_KEY) {
                if (step >= 32) break;
                continue;
            }
            if (vals[t] != NOT_TARGET) continue;
            const u64 h2 = home_slot(k2, mask);
            if ((h2 >> 5) == b && (h2 < h || (h2 == h && k2 < key))) ++rank;
        }
        const long long id = nt + (inclusive[b] - (long long)bucket_counts[b]) + rank;
        ids[s] = (int)id;
        unique_out[id] = (long long)key;
    }
}

extern "C" __global__ void au_lookup(long long nn, const int* __restrict__ ids, long long* slot_to_local,
                                     int* __restrict__ dup_count, const int* __restrict__ overflow) {
    if (*overflow) return;   // unplaced neighbors have no slot: reading one would leave the tables
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < nn; j += stride) {
        const int id = ids[slot_to_local[j]];
        slot_to_local[j] = id;
        atomicAdd(&dup_count[id], 1);
    }
}
