#!/usr/bin/env bash
# 4 x H200 (no carry). Issue 8:
# - XGNN vs DGL+C where TW's topology does not fit one GPU (budget topo:0.8): DGL+C as XGNN runs it
#   (topology on every GPU: OOM) and DGL+C in DGL's UVA mode (topology in host memory), beside Quiver.
# - +PSA on GSG+UK on the all-connected machine is a no-op whose sign was launch noise: +OGA and +PSA
#   alone, twice with a barrier before each stage (T without the wait for peers) and once without.
cd "$(dirname "$0")/../.."
D=.ci/device.sh
$D --limit 120 -- xgnn.table4 --device cuda --param datasets=TW --param models=gcn --param budget=topo:0.8 \
  --param systems=dgl_cache,dgl_cache_uva,quiver,xgnn --param synced_epochs=3 --param epochs=6 \
  --label h200x4_xgnn.table4-tw-topology-over-budget-uva
for run in a b; do
  $D --limit 100 -- xgnn.fig10 --device cuda --param combos=sage:UK --param steps=oga,psa --param stage_barrier=on \
    --param synced_epochs=9 --param epochs=11 --param max_edges=1.2e8 --label h200x4_xgnn.fig10-uk-psa-barrier-$run
done
$D --limit 100 --pack -- xgnn.fig10 --device cuda --param combos=sage:UK --param steps=oga,psa \
  --param synced_epochs=9 --param epochs=11 --param max_edges=1.2e8 --label h200x4_xgnn.fig10-uk-psa-nobarrier
ls -la "${OUT:-/tmp/harness-out}"
