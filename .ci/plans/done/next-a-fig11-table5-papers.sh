#!/usr/bin/env bash
# 4 x H200, first call of the next session (carry .wheels/pyg and .wheels/nvml). Issue 6, its last
# GPU items: Fig. 11 (our storage and sampling with PyG's layers vs our native layers) on products
# for GraphSAGE, GCN and GAT, and Table V's GCN and GAT cells on the papers100M stand-in.
cd "$(dirname "$0")/../.."
D=.ci/device.sh
$D --limit 260 --pack -- wholegraph.fig11 --device cuda --param datasets=ogbn-products --param models=sage,gcn,gat \
  --timeout 250 --label h200x4_wholegraph.fig11-products
$D --limit 200 --pack -- wholegraph.table5 --device cuda --param datasets=ogbn-papers100M --param models=gcn,gat \
  --param host_max_batches=2 --timeout 190 --label h200x4_wholegraph.table5-papers-gcn-gat
