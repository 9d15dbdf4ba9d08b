#!/usr/bin/env bash
# Next 4 x H200 session, first call (carry .wheels/pyg and .wheels/nvml): what issues 5 and 9
# still miss. GPU tests of the multi-GPU paths; MG-GCN Fig. 7 on 1, 2, 4 GPUs and Fig. 9 on 4;
# PyG's NeighborLoader (8 workers, prefetch drained) beside our [30,30,30] x 512 mini-batch.
cd "$(dirname "$0")/../.."
D=.ci/device.sh
C="--device cuda"
timeout 170 $D --tests --pytest --timeout=60 --pytest tests/gpu --pytest tests/pipelines --pytest tests/fullbatch
$D --limit 70 -- mggcn.fig7 $C --impl mggcn --param datasets=products --param gpus=1,2,4 --label h200x4_mggcn.fig7
$D --limit 50 -- mggcn.fig9 $C --param factors=1,4,16,64 --param gpus=4 --label h200x4_mggcn.fig9-4gpu
$D --limit 150 --pack -- wholegraph.sampling $C --gpus 1 --param kinds=minibatch,loader --param datasets=ogbn-products --param fanouts=30-30-30 --param batches=512 --impl path_doubling,pyg --param cpu_max_edges=1000000 --label h200x4-1gpu_sampling-loader
