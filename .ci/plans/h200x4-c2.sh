#!/usr/bin/env bash
# 4 x H200, third session, second call on the warm machine (carry .wheels/wholegraph): one hop
# of 6000 seeds x 10 and append-unique beside real WholeGraph on one GPU, then the first GPU run
# of the training pipelines (WholeGraph Table V: products, GraphSAGE, every pipeline).
cd "$(dirname "$0")/../.."
D=.ci/device.sh
C="--device cuda"
$D --limit 50 -- wholegraph.sampling wholegraph.unique $C --gpus 1 --param kinds=hop --param datasets=ogbn-products --label h200x4-1gpu_sampling-hop-unique
$D --limit 170 --pack -- wholegraph.table5 $C --param datasets=ogbn-products --param models=sage --param host_max_batches=12 --timeout 160 --label h200x4_wholegraph.table5-products-sage
