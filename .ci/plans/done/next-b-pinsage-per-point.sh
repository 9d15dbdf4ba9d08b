#!/usr/bin/env bash
# NOT IMPORTED: ran before the edge-weight fix (commit after 7d36415); its PinSAGE pipelined epochs reached loss NaN.
# 4 x H200 (no carry). Issue 8: 0118's PinSAGE rows ran 1 synced and 2 pipelined epochs in one launch
# (DGL's synced T came out 96 ms against a 68 ms E2E). Here TW and PA again with 3 synced epochs
# (median), a barrier before each stage, 8 epochs, and fresh rank processes for every point.
cd "$(dirname "$0")/../.."
.ci/device.sh --limit 330 --pack -- xgnn.table4 --device cuda --param models=pinsage --param datasets=TW,PA \
  --param systems=dgl,dgl_cache,xgnn --param synced_epochs=3 --param epochs=8 --param stage_barrier=on \
  --launch-per-point --label h200x4_xgnn.table4-pinsage-per-point
ls -la "${OUT:-/tmp/harness-out}"
