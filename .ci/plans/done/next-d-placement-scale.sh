#!/usr/bin/env bash
# 4 x H200 (no carry). Issue 7: Algorithm 1 vs RAND at 0.1N on the papers100M stand-in grows with
# the stand-in's scale at the paper's batch sizes (modeled 4GPU: 1.67x at 0.01, 1.89x at 0.03,
# 2.11x at 0.1 on the CPU machine). Modeled at scale 0.3 (33M nodes, 0.97G edges; the simulation runs
# on the host, the stand-in is generated on a GPU), then measured at scale 0.1 on the 4 GPUs.
cd "$(dirname "$0")/../.."
D=.ci/device.sh
$D --limit 360 -- placement.fig10 --device cuda --scale 0.3 --param topologies=4GPU,2GPU --param buffers=0.1N \
  --param batch_sizes=paper --param measured=false --param las_topologies=none --label h200x4_placement.fig10-x0.3-paper
$D --limit 180 --pack -- placement.fig10 --device cuda --scale 0.1 --param topologies=4GPU --param buffers=0.1N \
  --param batch_sizes=paper --param measured=4GPU --param las_topologies=none --label h200x4_placement.fig10-x0.1-paper
ls -la "${OUT:-/tmp/harness-out}"
