#!/usr/bin/env bash
# 4 x H200 (no carry). Issue 8: Table 5 (WholeGraph vs XGNN) with a barrier before each synced stage.
cd "$(dirname "$0")/../.."
.ci/device.sh --limit 200 --pack -- xgnn.table5 --device cuda --param synced_epochs=3 --param epochs=6 \
  --param stage_barrier=on --label h200x4_xgnn.table5-stage-barrier
ls -la "${OUT:-/tmp/harness-out}"
