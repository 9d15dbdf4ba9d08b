#!/usr/bin/env bash
# 4 x H200 (no carry). Issue 8: +PSA on GCN+TW on the all-connected machine (the same placement as
# +OGA) measured 0.79-0.97x over three shared launches; here as 0107 did for GSG+UK: +OGA and +PSA
# each in its own launch, barrier before each stage, 9 synced epochs.
cd "$(dirname "$0")/../.."
.ci/device.sh --limit 200 --pack -- xgnn.fig10 --device cuda --param combos=gcn:TW --param steps=oga,psa \
  --param stage_barrier=on --param synced_epochs=9 --param epochs=11 --param max_edges=1.2e8 --launch-per-point \
  --label h200x4_xgnn.fig10-tw-psa-per-point
ls -la "${OUT:-/tmp/harness-out}"
