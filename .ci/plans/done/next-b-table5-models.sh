#!/usr/bin/env bash
# 4 x H200, second call of the next session, on the machine warm from next-a (carry .wheels/wholegraph;
# PyG and NVML stay installed in /tmp/site from next-a; move reports/ out of the tree first, tree +
# carry <= 64 MiB). Issue 6's remaining Table V cells: GCN and GAT on products, GraphSAGE on the
# papers100M stand-in (PyG capped at 4 batches per epoch, extrapolated and labelled).
cd "$(dirname "$0")/../.."
D=.ci/device.sh
C="--device cuda"
$D --limit 230 -- wholegraph.table5 $C --param datasets=ogbn-products --param models=gcn,gat --param host_max_batches=4 --timeout 220 --label h200x4_wholegraph.table5-products-gcn-gat
$D --limit 180 -- wholegraph.table5 $C --param datasets=ogbn-papers100M --param models=sage --param host_max_batches=4 --timeout 170 --label h200x4_wholegraph.table5-papers-sage
# Issue 4: Fig. 10 again, now on the ids of the real sampler (append-unique order), with real
# WholeGraph in the same run.
$D --limit 120 --pack -- wholegraph.fig10 $C --impl p2p_shared,nccl_alltoallv,wholegraph_lib --label h200x4_wholegraph.fig10-sampler-ids
