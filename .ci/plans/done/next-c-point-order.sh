#!/usr/bin/env bash
# 4 x H200 (no carry). Issue 8: is the second point of a launch slower? (+PSA's T was 8-12% above
# +OGA's, identical work, in every launch; Table 5 runs WholeGraph before XGNN.) The same points in
# the reverse order, and each point in its own launch (--launch-per-point).
cd "$(dirname "$0")/../.."
D=.ci/device.sh
UK="--param combos=sage:UK --param stage_barrier=on --param synced_epochs=9 --param epochs=11 --param max_edges=1.2e8"
$D --limit 90 -- xgnn.fig10 --device cuda $UK --param steps=psa,oga --label h200x4_xgnn.fig10-uk-psa-first
$D --limit 120 -- xgnn.fig10 --device cuda $UK --param steps=oga,psa --launch-per-point \
  --label h200x4_xgnn.fig10-uk-psa-per-point
$D --limit 100 -- xgnn.table5 --device cuda --param synced_epochs=3 --param epochs=6 --param stage_barrier=on \
  --param systems=xgnn,wholegraph --label h200x4_xgnn.table5-xgnn-first
$D --limit 150 -- xgnn.table5 --device cuda --param synced_epochs=3 --param epochs=6 --param stage_barrier=on \
  --launch-per-point --label h200x4_xgnn.table5-per-point
$D --limit 120 --pack -- xgnn.table4 --device cuda --param datasets=TW --param models=gcn --param budget=topo:0.8 \
  --param systems=dgl_cache_uva,quiver,xgnn --param synced_epochs=3 --param epochs=10 --launch-per-point \
  --label h200x4_xgnn.table4-tw-over-budget-per-point
ls -la "${OUT:-/tmp/harness-out}"
