#!/usr/bin/env bash
# 2 x H200 (carry .wheels/wholegraph for the real-WholeGraph rows): continuous addressing through
# our CUDA VMM range (issue 4). Its GPU tests (tests/gpu/test_vmm_gpu.py), then the gather table
# (p2p_shared chunked / chunked-ipc / chunked-vmm / continuous beside real WholeGraph) and Fig. 8
# at a few segment sizes with continuous beside chunked. Fits one 10-minute call.
cd "$(dirname "$0")/../.."
D=.ci/device.sh
C="--device cuda --gpus 2"
$D --limit 200 --tests --pytest -k --pytest vmm -- wholegraph.gather $C \
  --impl 'p2p_shared,wholegraph_lib,ceiling_peer_copy' --param row_bytes=128,512 --label h200x2_vmm_gather
$D --limit 120 --pack -- wholegraph.fig8 $C --impl 'p2p_shared,ceiling_peer_copy' \
  --param segments=16,64,128,512,4096 --label h200x2_vmm_fig8
