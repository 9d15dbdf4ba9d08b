#!/usr/bin/env bash
# 4 x H200, carry .wheels/wholegraph and .wheels/nvml (move reports/ aside for the 64 MiB carry and
# restore it after the call). Issue 6: pylibwholegraph beside ours on the Table V cells it has not
# run yet (papers100M GCN/GAT, Friendster and UK all three models), PyG left out (measured in
# 0066/0075/0078/0084/0085).
cd "$(dirname "$0")/../.."
D=.ci/device.sh
$D --limit 280 --pack -- wholegraph.table5 --device cuda --impl wholegraph,wholegraph_lib \
  --param datasets=ogbn-papers100M,friendster,uk-2007-05 --param models=sage,gcn,gat --timeout 270 \
  --label h200x4_wholegraph.table5-big-graphs-wglib
