#!/usr/bin/env bash
# 4 x H200 (no carry). Issue 7: Our (Algorithm 1) over RAND at 0.1N grows with the papers100M stand-in's
# scale (modeled 4GPU: 2.11x at 0.1, 2.27x at 0.2, 2.37x at 0.3). The replay no longer scans N per
# de-duplication and the L-hop hotness runs on every core, so scale 0.5 (55M nodes) may fit one call:
# modeled only, RAND and Our on 4GPU.
cd "$(dirname "$0")/../.."
.ci/device.sh --limit 520 --pack -- placement.fig10 --device cuda --scale 0.5 --impl random,clique_opt \
  --param topologies=4GPU --param buffers=0.1N --param batch_sizes=paper --param measured=false \
  --param las_topologies=none --label h200x4_placement.fig10-x0.5-paper
ls -la "${OUT:-/tmp/harness-out}"
