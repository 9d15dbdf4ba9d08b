#!/usr/bin/env bash
# 1 x H200, carry .wheels/wholegraph (move results/ and reports/ out of the tree for the 64 MiB
# limit). Issue 29 on one GPU: our samplers with both append-uniques (dense_append in five launches)
# beside real WholeGraph's sampler on every configuration of wholegraph.sampling, fresh seed batches
# per call; MG-GCN with one rank (vertex order left alone) beside single_gpu on products and reddit.
# About 5 minutes.
cd "$(dirname "$0")/../.."
.ci/device.sh --limit 200 -- wholegraph.sampling --device cuda --gpus 1 --param kinds=minibatch,hop \
  --param datasets=ogbn-products,ogbn-papers100M,uniform:2000000:50 --impl path_doubling,wholegraph_lib \
  --timeout 190 --label h200_sampling-dense-five-launches
.ci/device.sh --limit 150 --pack -- mggcn.table3 --device cuda --gpus 1 --param datasets=products,reddit \
  --param models=paper --impl mggcn,single_gpu --timeout 140 --label h200_mggcn.table3-one-rank
