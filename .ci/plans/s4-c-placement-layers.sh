#!/usr/bin/env bash
# 4 x H200, third call of the fourth session (carry .wheels/pyg and .wheels/nvml). Issue 7: ICS'22
# Fig. 10 on the papers100M stand-in at scale 0.01 with the paper's batch sizes (2048 seeds, 8192
# nodes per layer: the measured gathers are then not launch-bound) and with sizes shrunk with the
# graph, measured on 2GPU, (2+2)GPU and 4GPU beside the model. Issue 6: the native layers'
# g-SpMM variants on the outer block shape, then ours on products with each variant (the
# segment path no longer copies the CSR offsets to the host).
cd "$(dirname "$0")/../.."
D=.ci/device.sh
C="--device cuda"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "${OUT:-/tmp/harness-out}"
$D --limit 200 -- placement.fig10 $C --scale 0.01 --param batch_sizes=paper --param las_topologies=none \
  --label h200x4_placement.fig10-x0.01-paper-batches
$D --limit 120 -- placement.fig10 $C --scale 0.01 --param las_topologies=2GPU \
  --label h200x4_placement.fig10-x0.01-scaled-batches
{ timeout 50 python3 -m impls.models.bench --device cuda --dst 460000 --src 2000000 --fanout 30 --dim 100 --layers sage
  timeout 30 python3 -m impls.models.bench --device cuda --dst 15000 --src 460000 --fanout 30 --dim 256 --layers sage
} 2>&1 | tee -a "${OUT:-/tmp/harness-out}/layer-bench.log" | tail -16
$D --limit 100 -- wholegraph.table5 $C --impl wholegraph --param datasets=ogbn-products --param models=sage \
  --param layer_impl=sparse --label h200x4_wholegraph.table5-ours-layer-sparse
$D --limit 80 --pack -- wholegraph.table5 $C --impl wholegraph --param datasets=ogbn-products --param models=sage \
  --param layer_impl=segment --label h200x4_wholegraph.table5-ours-layer-segment
