#!/usr/bin/env bash
# 4 x H200 (no carry). Issue 8, "done when" (1): GCN+TW under budget topo:0.8 (TW's topology does not fit
# one GPU): DGL+C (OOM as XGNN defines it), DGL+C in DGL's UVA mode, Quiver and XGNN, a third time
# (0101: one launch, 1.99x over DGL+C (UVA); 0110: one launch per point, 2.26x): per point, barrier before
# each stage, 3 synced epochs, 12 epochs.
cd "$(dirname "$0")/../.."
.ci/device.sh --limit 300 --pack -- xgnn.table4 --device cuda --param datasets=TW --param models=gcn \
  --param budget=topo:0.8 --param systems=dgl_cache,dgl_cache_uva,quiver,xgnn --param synced_epochs=3 \
  --param epochs=12 --param stage_barrier=on --launch-per-point --label h200x4_xgnn.table4-tw-over-budget-third
ls -la "${OUT:-/tmp/harness-out}"
