#!/usr/bin/env bash
# 1 x H200, carry .wheels/wholegraph (move results/ and reports/ out of the tree for the 64 MiB limit
# and restore them after the call). Issue 5: dense_append beside hash_append, torch.unique and real
# WholeGraph's append_unique on the frontiers of hops 1-3; our mini-batches with either append-unique
# beside real WholeGraph's sampler + append_unique, and the 6000 x 10 hop target, after the launch-path
# change (a9f33b1). About 6 minutes.
cd "$(dirname "$0")/../.."
.ci/device.sh --limit 120 -- wholegraph.unique --device cuda --gpus 1 \
  --impl hash_append,dense_append,sort,wholegraph_lib --param datasets=ogbn-products --param hops=1,2,3 \
  --label h200x1_unique-dense-wglib
.ci/device.sh --limit 200 -- wholegraph.sampling --device cuda --gpus 1 --param kinds=minibatch,hop \
  --param datasets=ogbn-products,uniform:2000000:50 --param fanouts=30-30-30,15-10-5 --param batches=512,6000 \
  --impl path_doubling,wholegraph_lib --param uniques=hash_append,dense_append \
  --label h200x1_sampling-dense-wglib
