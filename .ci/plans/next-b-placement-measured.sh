#!/usr/bin/env bash
# 4 x H200, second call of the next session, on the machine warm from next-a (no carry). Issue 7:
# ICS'22 Figs. 4, 5 and 6 with measured loading on 2GPU, (2+2)GPU and 4GPU. This session's runs
# (0063, 0073, 0074) were cut by their limits: PaGraph spent its whole 120 s cap on every topology
# before its row was skipped; it now stops once its projection is over 4x the cap.
cd "$(dirname "$0")/../.."
D=.ci/device.sh
C="--device cuda --param las_topologies=none"
$D --limit 170 --pack -- placement.fig4 $C --label h200x4_placement.fig4
$D --limit 170 --pack -- placement.fig5 $C --label h200x4_placement.fig5
$D --limit 170 --pack -- placement.fig6 $C --label h200x4_placement.fig6
