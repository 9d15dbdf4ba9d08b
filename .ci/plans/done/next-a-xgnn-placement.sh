#!/usr/bin/env bash
# 4 x H200, first call of the next session (carry .wheels/pyg and .wheels/nvml). Issue 8: the
# factor analysis on stand-ins twice this session's size (max_edges 1.2e8: about 8 mini-batches per
# GPU per epoch) with S/E/T the median of 3 synchronized epochs (0049's single 4-batch epoch let the
# trainer time swing 30% between identical steps); then one profiled epoch of XGNN and WholeGraph
# on GCN+TW (Table 5: XGNN's sampling was 2.2x WholeGraph's), kept out of results/. Issue 7:
# Fig. 6 (products) and Fig. 11 (MAG240M) with measured loading on 2GPU, (2+2)GPU and 4GPU.
cd "$(dirname "$0")/../.."
D=.ci/device.sh
C="--device cuda"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:-/tmp/harness-out}
$D --limit 260 -- xgnn.fig10 $C --param synced_epochs=3 --param epochs=5 --param max_edges=1.2e8 \
  --label h200x4_xgnn.fig10-x2-synced3
HARNESS_PROFILE_DIR=$OUT/profiles HARNESS_PROFILE_EPOCH=0 timeout 90 python3 -m harness run xgnn.table5 $C \
  --param combos=gcn:TW --out /tmp/profiled-runs --no-report 2>&1 | tail -2
$D --limit 110 -- placement.fig6 $C --param las_topologies=none --label h200x4_placement.fig6
$D --limit 110 --pack -- placement.fig11 $C --param las_topologies=none --label h200x4_placement.fig11
