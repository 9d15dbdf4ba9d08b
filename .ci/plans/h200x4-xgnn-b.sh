#!/usr/bin/env bash
# 4 x H200, part 2 of XGNN's training experiments (issue 8), best on the machine warm from part 1
# (the stand-ins are then cached): Fig. 10, Fig. 11 (Fig. 12's report reads its rows), Table 1 and
# Fig. 15. Estimated 7-8 minutes (add about a minute on a fresh machine for the stand-ins).
cd "$(dirname "$0")/../.."
D=.ci/device.sh
C="--device cuda"
$D --limit 170 -- xgnn.fig10 $C --label h200x4_xgnn.fig10
$D --limit 120 -- xgnn.fig11 $C --label h200x4_xgnn.fig11
$D --limit 80 -- xgnn.table1 $C --label h200x4_xgnn.table1
$D --limit 90 --pack -- xgnn.fig15 $C --label h200x4_xgnn.fig15
