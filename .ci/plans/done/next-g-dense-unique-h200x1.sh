#!/usr/bin/env bash
# 1 x H200 (16 CPU cores; the kind DESIGN section 5's 73 ms PyG measurement names), carry .wheels/pyg.
# Issue 5: the direct-mapped append-unique (dense_append) beside hash_append, on the GPU for the first
# time; PyG's NeighborLoader (8 workers) and both of ours in the same run on the uniform 2M-node graph;
# the append-unique table on products frontiers; then the developer profile. About 7 minutes.
cd "$(dirname "$0")/../.."
# The sampler and append-unique GPU tests first (dense_append and the thread-per-slot au_assign with
# its tail read-back have run on the emulator and through nvcc only).
timeout 170 .ci/device.sh --tests --pytest tests/gpu/test_sampling_gpu.py
.ci/device.sh --limit 120 -- wholegraph.sampling --device cuda --gpus 1 --param kinds=minibatch,loader \
  --param datasets=uniform:2000000:50 --param loader_datasets=uniform:2000000:50 --param fanouts=30-30-30 \
  --param batches=512 --impl path_doubling,pyg --param uniques=hash_append,dense_append \
  --param cpu_max_edges=1000000 --label h200x1_sampling-loader-uniform-dense
.ci/device.sh --limit 60 -- wholegraph.unique --device cuda --gpus 1 --impl hash_append,dense_append,sort \
  --param datasets=ogbn-products \
  --param hops=1,2,3 --label h200x1_unique-dense
PYTHONPATH=$PWD timeout 100 python3 .ci/profile_sampling.py --graphs random,products --batches 20 \
  --max-loads 0.5,0.25 2>&1 | grep -E "^==|^--|dm_|au_|path_doubling|Self CUDA time total"
