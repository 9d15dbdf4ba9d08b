#!/usr/bin/env bash
# 4 x H200, carry .wheels/pyg (torch-sparse, torch-scatter for PyG's sampler). Issue 5, the 50x target.
# DESIGN section 5 timed PyG's NeighborLoader ([30,30,30] x 512, 8 workers) at 73 ms per batch on a
# 2M-node random graph; our only loader run (0033) used the products stand-in, where PyG takes 16.1 ms.
# Same run, one GPU: PyG's loader and our path_doubling + hash_append mini-batch on a uniform random
# graph of 2M nodes (Poisson(50) neighbours) and on products; append-unique is now sized by the
# graph's node count (id_bound). Then a developer profile of our mini-batch (printed, not a result).
cd "$(dirname "$0")/../.."
.ci/device.sh --limit 330 --pack -- wholegraph.sampling --device cuda --gpus 1 --param kinds=minibatch,loader \
  --param datasets=uniform:2000000:50,ogbn-products --param loader_datasets=uniform:2000000:50,ogbn-products \
  --param fanouts=30-30-30 --param batches=512 --impl path_doubling,khop_batched,pyg --param cpu_max_edges=1000000 \
  --label h200x4-1gpu_sampling-loader-uniform
PYTHONPATH=$PWD timeout 150 python3 .ci/profile_sampling.py --graphs random,products --batches 20 2>&1 | tail -75
ls -la "${OUT:-/tmp/harness-out}"
