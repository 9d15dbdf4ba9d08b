#!/usr/bin/env bash
# 4 x H200, third session, first call (carry .wheels/pyg): MG-GCN on 4 GPUs (Table 3, memory,
# Fig. 7 permutation, Fig. 9 sweep) and the one-GPU sampling targets (one hop 6000 x 10 beside
# real WholeGraph; PyG's NeighborLoader with workers), which the earlier call ran out of time for.
cd "$(dirname "$0")/../.."
D=.ci/device.sh
C="--device cuda"
$D --limit 75 -- mggcn.table3 mggcn.memory mggcn.fig7 $C --impl mggcn --param datasets=products --param models=paper --param gpus=4 --label h200x4_mggcn-4gpu
$D --limit 45 -- mggcn.fig9 $C --param factors=1,4,16,64 --param gpus=4 --label h200x4_mggcn.fig9-4gpu
$D --limit 100 --pack -- wholegraph.sampling $C --gpus 1 --param kinds=hop,loader --label h200x4-1gpu_sampling-targets
