#!/usr/bin/env bash
# 2 x H200 (the 4-GPU kind was not lent), carry .wheels/pyg. Issue 5. (1) The GPU tests of the samplers and append-unique (warp-per-bucket
# au_assign, single read-back) and of everything that samples through the tiered stores (TieredSampler
# and TieredWalkSampler now pass their id bound, the hot-order row count, to append-unique): stores,
# tiered pipelines, XGNN experiments at toy scale. (2) 0124 again with the new au_assign: PyG's
# NeighborLoader and ours in the same run on the uniform 2M-node graph and on products. (3) The
# developer profile of our mini-batch on the uniform graph (printed, not a result).
cd "$(dirname "$0")/../.."
timeout 200 .ci/device.sh --tests --pytest tests/gpu/test_sampling_gpu.py --pytest tests/gpu/test_stores_gpu.py \
  --pytest tests/gpu/test_tiered_pipelines_gpu.py --pytest tests/gpu/test_xgnn_experiments_gpu.py
.ci/device.sh --limit 180 --pack -- wholegraph.sampling --device cuda --gpus 1 --param kinds=minibatch,loader \
  --param datasets=uniform:2000000:50,ogbn-products --param loader_datasets=uniform:2000000:50,ogbn-products \
  --param fanouts=30-30-30 --param batches=512 --impl path_doubling,khop_batched,pyg --param cpu_max_edges=1000000 \
  --label h200x2-1gpu_sampling-loader-uniform-warp-assign
PYTHONPATH=$PWD timeout 50 python3 .ci/profile_sampling.py --graphs random --batches 20 2>&1 | head -16
ls -la "${OUT:-/tmp/harness-out}"
