#!/usr/bin/env bash
# 1 x H200 (16 cores: 8 loader workers), carry .wheels/pyg. A check of Table V's capped PyG epochs:
# NeighborLoader workers build whole batches in parallel, so an epoch capped below the worker count
# (2 or 4 batches in 0065-0085) times one wave of batches and its per-batch extrapolation overstates
# the epoch. The same pyg_host epoch capped at 2, 8 and 16 batches; with waves, 2 extrapolates to
# about 4x what 8 and 16 give. About 5 minutes.
cd "$(dirname "$0")/../.."
for cap in 2 8 16; do
  .ci/device.sh --limit 110 -- wholegraph.table5 --device cuda --gpus 1 --impl pyg_host \
    --param datasets=ogbn-products --param models=sage --param epochs=1 --param warmup_batches=1 \
    --param eval_nodes=1000 --param host_max_batches=$cap --timeout 100 --label h200x1_table5-pyg-cap$cap
done
