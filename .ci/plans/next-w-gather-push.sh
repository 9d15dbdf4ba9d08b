#!/usr/bin/env bash
# 2 or 4 GPUs (N=2: nvidia-h100-x2 / nvidia-h200-x2, or 2 GPUs of a 4-GPU machine; N=4: nvidia-h100-x4 /
# nvidia-h200-x4). Carry .wheels/wholegraph (about 56 MiB: move results/ and reports/ out of the tree
# first). Issue 36 item 2, the gather at 512 B rows pushed by the rows' owners:
# (a) the gpu gather tests: every cross-GPU gather (pull kernel with plain / L2::256B / bulk-copy loads,
#     push with NVLink stores / bulk-copy stores, NCCL) exact on adversarial ids in every dtype, the
#     copy-engine ceiling's copies checked, on N GPUs;
# (b, c) one wholegraph.gather run at 512 B with the link counters on: every variant beside real
#     WholeGraph, ceiling_peer_copy and the copy engines all-to-all both ways (ceiling_copy_all), each
#     GPU point repeated half a second with NVML's NVLink payload and raw byte counters read around it
#     (after its timing, which they do not touch);
# then the same run again without counters and with four kernel geometries of the pull and push
#     kernels (the same-run ratios a second time; which geometry the push wants).
# Set N=2 or N=4. About 5 minutes; at most 8.5 with every limit reached.
cd "$(dirname "$0")/../.."
N=${N:?set N=2 or N=4}
OUT=${OUT:-/tmp/harness-out}; mkdir -p "$OUT"
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-$(seq -s, 0 $((N - 1)))}   # the tests use every visible GPU
timeout --signal=INT --kill-after=20 200 .ci/device.sh --tests --pytest tests/gpu/test_gather_gpu.py \
  --pytest -k --pytest "adversarial or copy_engine or single_rank"
.ci/device.sh --limit 150 -- wholegraph.gather --device cuda --gpus "$N" --param row_bytes=512 \
  --param link_counters=on --impl 'p2p*,wholegraph_lib,nccl_alltoallv,ceiling*' --timeout 140 \
  --label x${N}_gather-push-links
.ci/device.sh --limit 150 --pack -- wholegraph.gather --device cuda --gpus "$N" --param row_bytes=512 \
  --param p2p_launch=4x256u4,16x256u4,8x256u8,8x512u4 --impl 'p2p*,wholegraph_lib,ceiling_peer_copy' \
  --timeout 140 --label x${N}_gather-push-geometry
