#!/usr/bin/env bash
# 4 x H200, first call of the next session (carry .wheels/pyg and .wheels/nvml). Issue 6's open
# target is GPU utilization >= 90% during our training (measured: 71% with prefetch, 63%
# without, products GraphSAGE, results 0045/0046). Suspect: the native layers' default on GPUs
# ("segment": [nnz, F] messages in chunks, one host sync for the chunk cut on the 13.8M-edge
# outer block). So: the layer benchmark on the outer and middle block shapes, then ours on
# products with each layer implementation; then the GPU tests with durations (this session's
# 120 s cut hid which ones are slow) and the VMM tests (their memory check was fixed unrun).
cd "$(dirname "$0")/../.."
D=.ci/device.sh
C="--device cuda"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "${OUT:-/tmp/harness-out}"
{ timeout 60 python3 -m impls.models.bench --device cuda --dst 460000 --src 2000000 --fanout 30 --dim 100 --layers sage
  timeout 40 python3 -m impls.models.bench --device cuda --dst 15000 --src 460000 --fanout 30 --dim 256 --layers sage
} 2>&1 | tee -a "${OUT:-/tmp/harness-out}/layer-bench.log" | tail -20
for impl in sparse segment; do
  $D --limit 60 -- wholegraph.table5 $C --impl wholegraph --param datasets=ogbn-products --param models=sage \
    --param layer_impl=$impl --label h200x4_wholegraph.table5-ours-layer-$impl
done
timeout 200 $D --tests --pytest --timeout=90 --pytest --durations=15 --pytest -k --pytest "not xgnn_training_experiments" \
  --pytest tests/gpu --pytest tests/pipelines --pytest tests/fullbatch
$D --limit 90 --pack --tests --pytest -k --pytest vmm -- wholegraph.fig10 $C --impl p2p_shared,nccl_alltoallv \
  --label h200x4_wholegraph.fig10
