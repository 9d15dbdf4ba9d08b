#!/usr/bin/env bash
# 4 x H200 (no carry). Issue 8: XGNN Table 4's PinSAGE rows again after the edge-weight fix (0118 is
# withdrawn): the four stand-ins under the paper's rule, 3 synced epochs (median) with a barrier before
# each stage, 8 epochs, fresh rank processes for every point.
cd "$(dirname "$0")/../.."
.ci/device.sh --limit 420 --pack -- xgnn.table4 --device cuda --param models=pinsage \
  --param synced_epochs=3 --param epochs=8 --param stage_barrier=on --launch-per-point \
  --label h200x4_xgnn.table4-pinsage-per-point
grep -c "loss nan" "${OUT:-/tmp/harness-out}/run.log"
ls -la "${OUT:-/tmp/harness-out}"
