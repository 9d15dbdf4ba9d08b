#!/usr/bin/env bash
# 4 x H200, first call of the third session (carry .wheels/pyg and .wheels/nvml): what issues 9
# and 5 still miss. GPU tests of the multi-GPU paths (XGNN's two-GPU experiment test runs in the
# XGNN call); MG-GCN peak memory with the library-workspace probe on 1 and 4 GPUs; Table 3 on the
# Reddit, Papers and Proteins stand-ins at 1, 2, 4 GPUs; Fig. 7 on 1, 2, 4 GPUs; PyG's
# NeighborLoader (8 workers, prefetch drained) beside our [30,30,30] x 512 mini-batch; Fig. 9 on
# 1 and 4 GPUs. About 9 minutes; every step has its own limit.
cd "$(dirname "$0")/../.."
D=.ci/device.sh
C="--device cuda"
timeout 120 $D --tests --pytest --timeout=60 --pytest -k --pytest "not xgnn_training_experiments" \
  --pytest tests/gpu --pytest tests/pipelines --pytest tests/fullbatch
$D --limit 50 -- mggcn.memory $C --impl mggcn --param datasets=products --param gpus=1,4 --label h200x4_mggcn.memory-workspace
$D --limit 120 -- mggcn.table3 $C --param datasets=reddit,papers,proteins --param gpus=1,2,4 --label h200x4_mggcn.table3-others
$D --limit 70 -- mggcn.fig7 $C --impl mggcn --param datasets=products,reddit --param gpus=1,2,4 --label h200x4_mggcn.fig7
$D --limit 110 -- wholegraph.sampling $C --gpus 1 --param kinds=minibatch,loader --param datasets=ogbn-products --param fanouts=30-30-30 --param batches=512 --impl path_doubling,pyg --param cpu_max_edges=1000000 --label h200x4-1gpu_sampling-loader
$D --limit 70 --pack -- mggcn.fig9 $C --param factors=1,4,16,64 --param gpus=1,4 --label h200x4_mggcn.fig9
