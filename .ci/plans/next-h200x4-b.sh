#!/usr/bin/env bash
# Next 4 x H200 session, second call on the warm machine (carry .wheels/wholegraph): WholeGraph
# Table V on products with GraphSAGE, every pipeline, on 4 and on 2 GPUs (ours first, then
# pylibwholegraph, then PyG's capped epochs), and the 4-GPU sampling grid without PyG's
# in-process sampler (about 8 s per [30,30,30] x 512 batch there) plus append-unique.
cd "$(dirname "$0")/../.."
D=.ci/device.sh
C="--device cuda"
$D --limit 210 -- wholegraph.table5 $C --param datasets=ogbn-products --param models=sage --param host_max_batches=8 --timeout 200 --label h200x4_wholegraph.table5-products-sage
$D --limit 170 -- wholegraph.table5 $C --gpus 2 --param datasets=ogbn-products --param models=sage --param host_max_batches=8 --timeout 160 --label h200x4-2gpu_wholegraph.table5-products-sage
$D --limit 150 --pack -- wholegraph.sampling wholegraph.unique $C --param kinds=minibatch --impl path_doubling,reservoir,khop_batched,wholegraph_lib,hash_append,sort --label h200x4_sampling-gpu-impls
