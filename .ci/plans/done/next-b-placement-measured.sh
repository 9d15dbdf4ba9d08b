#!/usr/bin/env bash
# 4 x H200, second call of the next session, on the machine warm from next-a (no carry). Issue 7:
# ICS'22 Figs. 4, 5 and 6 with measured loading on the topologies this machine has (2GPU, (2+2)GPU,
# 4GPU; the 8-GPU ones are simulated only and need no GPU). This session's runs (0063, 0073, 0074)
# were cut by their limits: PaGraph spent its whole 120 s cap on every topology before its row was
# skipped; it now stops once its projection is over 4x the cap, and the cap here is 30 s (reddit at
# scale 0.2, simulated part: 91 s on the 2-core CI machine with these settings).
cd "$(dirname "$0")/../.."
D=.ci/device.sh
for fig in fig4 fig5 fig6; do
  $D --limit 180 --pack -- placement.$fig --device cuda --param las_topologies=none \
    --param 'topologies=2GPU,(2+2)GPU,4GPU' --param pagraph_cap_s=30 --label h200x4_placement.$fig
done
