#!/usr/bin/env bash
# 4 x H200, one call (carry .wheels/pyg and .wheels/nvml; pylibwholegraph does not fit beside them,
# so its rows skip). Issue 6: the GPU tests of the model ops with the new cuSPARSE SDDMM backward
# (GAT's attention gradient), the GAT layer benchmark (sampled vs gathered SDDMM, hidden-layer
# shape: 4 heads of 64), Table V on the Friendster and UK stand-ins (GraphSAGE, PyG capped at 2
# batches per epoch), then products GAT with the new default (0065: 7.35 s per epoch, 8x GCN).
cd "$(dirname "$0")/../.."
D=.ci/device.sh
OUT=${OUT:-/tmp/harness-out}
$D --limit 90 --tests --pytest tests/models
timeout 60 python3 -m impls.models.bench --device cuda --layers gat --dst 16000 --src 480000 --dim 256 \
  2>&1 | tee "$OUT/bench-gat.txt" | tail -9
$D --limit 170 --pack -- wholegraph.table5 --device cuda --param datasets=friendster,uk-2007-05 --param models=sage \
  --param host_max_batches=2 --timeout 160 --label h200x4_wholegraph.table5-friendster-uk-sage
$D --limit 100 --pack -- wholegraph.table5 --device cuda --param datasets=ogbn-products --param models=gat \
  --impl wholegraph --timeout 90 --label h200x4_wholegraph.table5-products-gat-sddmm
