#!/usr/bin/env bash
# 1 x H200, carry .wheels/wholegraph (58 MB: move results/ and reports/ out of the tree for the
# 64 MiB limit, restore them after). Sampling and append-unique timed fairly: a fresh seed batch per
# warm-up and repeat (one shuffle cut into batches), the L2 flushed before each append-unique call.
# Real WholeGraph beside ours in the same run, on one GPU, the issue-29 grid (products, papers100M
# and the uniform graph; batches 512, 1024, 6000; fanouts 30-30-30, 25-10, 15-10-5; one hop of
# 6000 x 10), both of our append-uniques. GPU sampling tests first. About 8 minutes.
cd "$(dirname "$0")/../.."
.ci/device.sh --tests --pytest tests/gpu/test_sampling_gpu.py
.ci/device.sh --limit 150 -- wholegraph.unique --device cuda --gpus 1 \
  --impl hash_append,dense_append,sort,wholegraph_lib --param datasets=ogbn-products,ogbn-papers100M \
  --param hops=1,2,3 --timeout 140 --label h200_unique-fair-wglib
.ci/device.sh --limit 330 --pack -- wholegraph.sampling --device cuda --gpus 1 --param kinds=minibatch,hop \
  --param datasets=ogbn-products,ogbn-papers100M,uniform:2000000:50 --impl path_doubling,wholegraph_lib \
  --param uniques=hash_append,dense_append --timeout 320 --label h200_sampling-fair-wglib
