#!/usr/bin/env bash
# 2 x H200 (carry .wheels/wholegraph for the real-WholeGraph rows). Issue 4: continuous addressing
# through our CUDA VMM range on 2 GPUs: its GPU tests (tests/gpu/test_vmm_gpu.py), then the gather
# table (p2p_shared chunked / chunked-ipc / chunked-vmm / continuous beside real WholeGraph) and
# Fig. 8 at a few segment sizes. Issue 5: the 2-GPU sampling grid (0023 skipped every point: run
# again with the GPU implementations named, as 0038 did on 4 GPUs). Fits one 10-minute call.
cd "$(dirname "$0")/../.."
D=.ci/device.sh
C="--device cuda --gpus 2"
$D --limit 200 --tests --pytest -k --pytest vmm -- wholegraph.gather $C \
  --impl 'p2p_shared,wholegraph_lib,ceiling_peer_copy' --param row_bytes=128,512 --label h200x2_vmm_gather
$D --limit 100 -- wholegraph.fig8 $C --impl 'p2p_shared,ceiling_peer_copy' \
  --param segments=16,64,128,512,4096 --label h200x2_vmm_fig8
$D --limit 150 --pack -- wholegraph.sampling wholegraph.unique $C --param kinds=minibatch \
  --impl path_doubling,reservoir,khop_batched,wholegraph_lib,hash_append,sort --label h200x2_sampling-gpu-impls
