#!/usr/bin/env bash
# A 4 x H200 call for issue 7: ICS'22 Fig. 10 (papers100M-like stand-in) with the measured
# loading path on 2GPU, (2+2)GPU and 4GPU beside the modeled one (about 5 minutes), then
# Fig. 6 (products) quick.
cd "$(dirname "$0")/../.."
D=.ci/device.sh
C="--device cuda"
$D --limit 360 -- placement.fig10 $C --label h200x4_placement.fig10
$D --limit 180 --pack -- placement.fig6 $C --quick --label h200x4_placement.fig6-quick
