#!/usr/bin/env bash
# 1 x H200 (16 cores), carry .wheels/pyg. The PyG-loader target on the products stand-in timed by its
# production rate (windows of 8 batches; 0033/0124/0125 stored the median gap inside a wave), beside
# both of our append-uniques in the same run. About 2 minutes.
cd "$(dirname "$0")/../.."
.ci/device.sh --limit 200 -- wholegraph.sampling --device cuda --gpus 1 --param kinds=minibatch,loader \
  --param datasets=ogbn-products --param loader_datasets=ogbn-products --param fanouts=30-30-30 \
  --param batches=512 --impl path_doubling,pyg --param uniques=hash_append,dense_append \
  --param cpu_max_edges=1000000 --label h200x1_sampling-loader-rate-products
