#!/usr/bin/env bash
# 4 x H200 (no carry). Issue 7: measured 2.4x. 0122 (scale 0.5, split loader: p2p gather + host gather +
# two scatters) measured Our/RAND 1.92x against 2.49x modeled; fitting its two rows puts ~0.15 ms of
# fixed cost per step on top of the transfers. The fused loader (ICS'22 3.2: one kernel per batch reading
# every row where dev_num says, GPU buffers and the mapped host table in one pointer table) is now the
# default. First the GPU tests of the fused and split loaders and of append-unique's id bound, then
# the same scale-0.5 configuration as 0122 with the fused loader (the measured group reuses the
# simulated points' replays now, so it no longer samples twice).
cd "$(dirname "$0")/../.."
.ci/device.sh --tests --pytest tests/gpu/test_placement_measure_gpu.py --pytest tests/gpu/test_sampling_gpu.py
.ci/device.sh --limit 480 --pack -- placement.fig10 --device cuda --scale 0.5 --impl random,clique_opt \
  --param topologies=4GPU --param buffers=0.1N --param batch_sizes=paper --param measured=4GPU \
  --param las_topologies=none --param max_batches=24 --label h200x4_placement.fig10-x0.5-paper-measured-fused
ls -la "${OUT:-/tmp/harness-out}"
