#!/usr/bin/env bash
# 4 x H200 (carry .wheels/pyg and .wheels/nvml). Issue 6: the last Table V cells, GCN and GAT on the
# Friendster and UK-2007 stand-ins, ours beside PyG (PyG capped at 2 batches per epoch, extrapolated).
cd "$(dirname "$0")/../.."
D=.ci/device.sh
$D --limit 330 --pack -- wholegraph.table5 --device cuda --param datasets=friendster,uk-2007-05 --param models=gcn,gat \
  --param host_max_batches=2 --timeout 320 --label h200x4_wholegraph.table5-friendster-uk-gcn-gat
