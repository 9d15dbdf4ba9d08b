#!/usr/bin/env bash
# 4 x H200 (no carry). The GPU tests that sample through the tiered stores (TieredSampler and
# TieredWalkSampler now pass their id bound, the hot-order row count, to append-unique): stores,
# tiered pipelines (GraphSAGE, GCN, PinSAGE against the single-process reference) and the XGNN
# experiments at toy scale. 0123's call already ran tests/gpu/test_sampling_gpu.py and the placement
# measure tests.
cd "$(dirname "$0")/../.."
timeout 420 .ci/device.sh --tests --pytest tests/gpu/test_stores_gpu.py --pytest tests/gpu/test_tiered_pipelines_gpu.py \
  --pytest tests/gpu/test_xgnn_experiments_gpu.py
cp "${OUT:-/tmp/harness-out}/gpu-tests.log" "${OUT:-/tmp/harness-out}/gpu-tests-tiered.log" 2>/dev/null
