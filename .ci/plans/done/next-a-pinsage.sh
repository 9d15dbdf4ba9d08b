#!/usr/bin/env bash
# 4 x H200 (no carry). Issue 8: PinSAGE by random walks over the tiered stores. The GPU tests of the
# walk kernel (bit-equal to the reference; over every store design; the pipelines' loss reference
# with PinSAGE cases), then XGNN Table 4's PinSAGE rows on the four stand-ins under the paper's rule.
cd "$(dirname "$0")/../.."
D=.ci/device.sh
$D --tests --pytest tests/gpu/test_sampling_gpu.py --pytest tests/gpu/test_stores_gpu.py \
  --pytest tests/gpu/test_tiered_pipelines_gpu.py --pytest -x
$D --limit 300 --pack -- xgnn.table4 --device cuda --param models=pinsage --label h200x4_xgnn.table4-pinsage
ls -la "${OUT:-/tmp/harness-out}"
