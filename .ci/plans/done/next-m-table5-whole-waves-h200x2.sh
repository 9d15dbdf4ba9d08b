#!/usr/bin/env bash
# 2 x H200 (32 cores: 8 loader workers per rank), carry .wheels/pyg. Table V's GraphSAGE cells with PyG's epoch
# timed in whole loader waves (16 batches per GPU = 2 waves of 8; earlier 4-GPU cells were capped at
# 2-12 batches and are upper bounds) beside ours in the same run, on two GPUs (the 4-GPU kind is not
# lent). Two calls: PART=a (products, papers100M), PART=b (Friendster, UK). About 5 minutes each.
cd "$(dirname "$0")/../.."
case "${PART:-a}" in
  a) ds=ogbn-products,ogbn-papers100M ;;
  b) ds=friendster,uk-2007-05 ;;
esac
.ci/device.sh --limit 290 -- wholegraph.table5 --device cuda --gpus 2 --impl pyg_host,wholegraph \
  --param datasets=$ds --param models=sage --param epochs=1 --param eval_nodes=2048 \
  --param host_max_batches=16 --timeout 250 --label h200x2_table5-sage-whole-waves-${PART:-a}
