#!/usr/bin/env bash
# 4 x H200 (no carry). Issue 8: the tiered pipelines' GPU tests (now with DGL+C in UVA mode under a
# budget DGL+C does not fit). Issue 7: placement Fig. 10 measured on 4 GPUs at scale 0.1 with the
# paper's batches (modeled there: Our 2.11x RAND at 0.1N).
cd "$(dirname "$0")/../.."
D=.ci/device.sh
$D --tests --pytest tests/gpu/test_tiered_pipelines_gpu.py
$D --limit 330 --pack -- placement.fig10 --device cuda --scale 0.1 --param topologies=4GPU --param buffers=0.1N \
  --param batch_sizes=paper --param measured=4GPU --param las_topologies=none --param max_batches=24 \
  --label h200x4_placement.fig10-x0.1-paper-measured
ls -la "${OUT:-/tmp/harness-out}"
