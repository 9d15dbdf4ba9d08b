#!/usr/bin/env bash
# 4 x H200, second call on the warm machine (carry .wheels/wholegraph; PyG's wheels are
# still installed from the first call): sampling on 4, 1 and 2 of the GPUs (issue 5), KHop
# (XGNN Fig. 14), append-unique, and the 4-GPU gather runs (issue 4).
cd "$(dirname "$0")/../.."
D=.ci/device.sh
C="--device cuda"
$D --limit 60 -- xgnn.fig14 $C --label h200x4_xgnn.fig14
$D --limit 150 -- wholegraph.sampling wholegraph.unique $C --param kinds=minibatch --label h200x4_sampling
$D --limit 90 -- wholegraph.sampling $C --gpus 1 --label h200x4-1gpu_sampling
$D --limit 70 -- wholegraph.sampling $C --gpus 2 --param kinds=minibatch --param batches=512,6000 --label h200x4-2gpu_sampling
$D --limit 25 -- wholegraph.fig8 $C --label h200x4_wholegraph.fig8
$D --limit 75 --pack -- wholegraph.gather $C --label h200x4_wholegraph.gather
