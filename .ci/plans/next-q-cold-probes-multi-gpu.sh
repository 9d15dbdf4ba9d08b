#!/usr/bin/env bash
# 2 x H200 or 4 x H200, when lent (ask `status` first). The cold probes across GPUs: wholegraph.table1
# (UM and P2P spread over every GPU, and their remote-only variants) and xgnn.fig6 (remote random
# reads and chase), then the samplers on the sharded store with fair timing (a fresh seed batch per
# call) beside real WholeGraph (carry .wheels/wholegraph; move results/ and reports/ out of the tree).
# Set N=2 or N=4. About 9 minutes.
cd "$(dirname "$0")/../.."
N=${N:?set N=2 or N=4}
.ci/device.sh --tests --pytest tests/gpu/test_probes_gpu.py
.ci/device.sh --limit 240 -- wholegraph.table1 --device cuda --gpus "$N" --timeout 230 --label h200x${N}_table1-cold
.ci/device.sh --limit 120 -- xgnn.fig6 --device cuda --gpus "$N" --timeout 110 --label h200x${N}_fig6-cold
.ci/device.sh --limit 150 --pack -- wholegraph.sampling --device cuda --gpus "$N" --param kinds=minibatch \
  --param datasets=ogbn-products,ogbn-papers100M,uniform:2000000:50 --impl path_doubling,wholegraph_lib \
  --param uniques=hash_append,dense_append --timeout 140 --label h200x${N}_sampling-fair-wglib
