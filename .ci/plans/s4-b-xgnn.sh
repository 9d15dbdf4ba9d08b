#!/usr/bin/env bash
# 4 x H200, second call of the fourth session, on the machine warm from h200x4-xgnn-a.sh (the
# four XGNN stand-ins are cached there): issue 8's factor analysis (Fig. 10), scalability
# (Fig. 11, which Fig. 12's report reads) and Table 1. Fig. 15 (one GPU) waits for a later call.
cd "$(dirname "$0")/../.."
D=.ci/device.sh
C="--device cuda"
$D --limit 170 -- xgnn.fig10 $C --label h200x4_xgnn.fig10
$D --limit 120 -- xgnn.fig11 $C --label h200x4_xgnn.fig11
$D --limit 80 --pack -- xgnn.table1 $C --label h200x4_xgnn.table1
