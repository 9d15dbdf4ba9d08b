#!/usr/bin/env bash
# 4 x H200, second call on the machine warm from next-h200x4-a (carry .wheels/wholegraph; PyG and
# NVML stay installed in /tmp/site). Issue 6: Table III at equal training steps (every pipeline
# 3 warm-up + 2 x 12 batches; this session's attempt, 0036, ran out of time in PyG's part);
# GCN and GAT on products; GraphSAGE on the papers100M stand-in (PyG capped at 4 batches).
cd "$(dirname "$0")/../.."
D=.ci/device.sh
C="--device cuda"
$D --limit 170 -- wholegraph.table5 $C --param datasets=ogbn-products --param models=sage --param max_batches=12 --timeout 160 --label h200x4_wholegraph.table5-products-sage-equal-steps
$D --limit 200 -- wholegraph.table5 $C --param datasets=ogbn-products --param models=gcn,gat --param host_max_batches=4 --timeout 190 --label h200x4_wholegraph.table5-products-gcn-gat
$D --limit 180 --pack -- wholegraph.table5 $C --param datasets=ogbn-papers100M --param models=sage --param host_max_batches=4 --timeout 170 --label h200x4_wholegraph.table5-papers-sage
