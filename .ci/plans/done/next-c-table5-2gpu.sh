#!/usr/bin/env bash
# 4 x H200, third call of the next session on the machine warm from next-a and next-b (PyG, NVML and
# WholeGraph wheels installed in /tmp/site; no carry needed). Issue 6: Table V on 2 of the GPUs with the
# current layer default (0037 ran the gather + segment-reduce layers), PyG capped at 8 batches; then
# XGNN Fig. 15b at the paper's 120 epochs.
cd "$(dirname "$0")/../.."
D=.ci/device.sh
$D --limit 300 -- wholegraph.table5 --device cuda --gpus 2 --param datasets=ogbn-products --param models=sage \
  --param host_max_batches=8 --timeout 290 --label h200x4-2gpu_wholegraph.table5-products-sage
# Issue 8: Fig. 15b at the paper's 120 epochs (0059 ran 12: accuracy stopped near 15%).
$D --limit 240 --pack -- xgnn.fig15 --device cuda --param parts=b --label h200x4_xgnn.fig15b-120-epochs
