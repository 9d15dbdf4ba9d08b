#!/usr/bin/env bash
# 4 x H200, third session, first call (carry .wheels/pyg and .wheels/nvml): MG-GCN on 4 GPUs
# (Table 3, memory, Fig. 7 permutation) and PyG's NeighborLoader with workers beside our
# [30,30,30] x 512 mini-batch on one GPU (the sampling target the earlier call ran out of
# time for).
cd "$(dirname "$0")/../.."
D=.ci/device.sh
C="--device cuda"
$D --limit 75 -- mggcn.table3 mggcn.memory mggcn.fig7 $C --impl mggcn --param datasets=products --param models=paper --param gpus=4 --label h200x4_mggcn-4gpu
$D --limit 60 --pack -- wholegraph.sampling $C --gpus 1 --param kinds=minibatch,loader --param datasets=ogbn-products --param fanouts=30-30-30 --param batches=512 --impl path_doubling,pyg --param cpu_max_edges=1000000 --label h200x4-1gpu_sampling-loader
