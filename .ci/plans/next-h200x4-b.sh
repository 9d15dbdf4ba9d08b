#!/usr/bin/env bash
# 4 x H200, second call on the machine warm from next-h200x4-a (carry .wheels/wholegraph; PyG and
# NVML stay installed in /tmp/site): WholeGraph Table V on products with GraphSAGE, every
# pipeline: (1) timing, 4 GPUs: ours and pylibwholegraph full epochs, PyG capped at 8 batches an
# epoch (extrapolated); (2) accuracy at equal steps, 4 GPUs: every pipeline 3 warm-up + 2 x 12
# batches, so Table III compares models trained alike; (3) timing on 2 GPUs; then the 4-GPU
# sampling grid without PyG's in-process sampler, plus append-unique.
cd "$(dirname "$0")/../.."
D=.ci/device.sh
C="--device cuda"
$D --limit 200 -- wholegraph.table5 $C --param datasets=ogbn-products --param models=sage --param host_max_batches=8 --timeout 190 --label h200x4_wholegraph.table5-products-sage
$D --limit 110 -- wholegraph.table5 $C --param datasets=ogbn-products --param models=sage --param max_batches=12 --timeout 100 --label h200x4_wholegraph.table5-products-sage-equal-steps
$D --limit 140 -- wholegraph.table5 $C --gpus 2 --param datasets=ogbn-products --param models=sage --param host_max_batches=8 --timeout 130 --label h200x4-2gpu_wholegraph.table5-products-sage
$D --limit 110 --pack -- wholegraph.sampling wholegraph.unique $C --param kinds=minibatch --impl path_doubling,reservoir,khop_batched,wholegraph_lib,hash_append,sort --label h200x4_sampling-gpu-impls
