#!/usr/bin/env bash
# 1 x H200 (16 CPU cores; the kind DESIGN section 5's 73 ms PyG measurement names), carry .wheels/pyg.
# Issue 5: PyG's NeighborLoader (8 workers) and our mini-batch in the same run on the uniform 2M-node
# graph only (not run in the tenth session: its device time ran out), then a sweep of append-unique's table
# load in the developer profile. About 6 minutes.
cd "$(dirname "$0")/../.."
# The sampler GPU tests first: au_assign with the tail read-back in the thread-per-slot form (ecc24e6)
# has run on the emulator and through nvcc, not yet on a GPU.
timeout 150 .ci/device.sh --tests --pytest tests/gpu/test_sampling_gpu.py
.ci/device.sh --limit 95 -- wholegraph.sampling --device cuda --gpus 1 --param kinds=minibatch,loader \
  --param datasets=uniform:2000000:50 --param loader_datasets=uniform:2000000:50 --param fanouts=30-30-30 \
  --param batches=512 --impl path_doubling,pyg --param cpu_max_edges=1000000 --label h200x1_sampling-loader-uniform
# Append-unique's table load on the id-bounded tables (0125: au_assign did not get faster at load 1/2).
PYTHONPATH=$PWD timeout 120 python3 .ci/profile_sampling.py --graphs random,products --batches 20 \
  --max-loads 0.5,0.25,0.125 2>&1 | grep "^=="
