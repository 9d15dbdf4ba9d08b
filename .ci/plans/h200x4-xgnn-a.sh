#!/usr/bin/env bash
# 4 x H200 (no wheels to carry): XGNN's training experiments, part 1 (issue 8): the GPU test of the
# experiments (toy scale, 2 GPUs), then Table 4 and Table 5. The first run generates the four
# stand-ins (TW, PA, UK, CF at 6e7 stored edges each) that every later run reuses on a warm machine.
# Estimated 8-9 minutes; each step has its own limit, the last one packs the runs into results.tgz.
cd "$(dirname "$0")/../.."
D=.ci/device.sh
C="--device cuda"
timeout 130 $D --tests --pytest -k --pytest test_xgnn_training_experiments_on_two_gpus --pytest --timeout=120
$D --limit 300 -- xgnn.table4 $C --label h200x4_xgnn.table4
$D --limit 90 --pack -- xgnn.table5 $C --label h200x4_xgnn.table5
