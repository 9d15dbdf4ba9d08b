#!/usr/bin/env bash
# 1 x H200, carry .wheels/pyg (torch-sparse/torch-scatter for PyG's sampler). The PyG-loader target
# with fair timing on both sides: PyG's NeighborLoader (8 workers) by production rate over whole
# waves, ours with a fresh seed batch per call, in the same run, on the uniform 2M-node graph and
# the products stand-in, [30,30,30] x 512. About 4 minutes.
cd "$(dirname "$0")/../.."
for ds in uniform:2000000:50 ogbn-products; do
  .ci/device.sh --limit 170 --pack -- wholegraph.sampling --device cuda --gpus 1 --param kinds=minibatch,loader \
    --param datasets=$ds --param loader_datasets=$ds --param fanouts=30-30-30 --param batches=512 \
    --impl path_doubling,pyg --param uniques=hash_append,dense_append --param cpu_max_edges=1000000 \
    --timeout 160 --label h200_sampling-loader-fair-${ds%%:*}
done
