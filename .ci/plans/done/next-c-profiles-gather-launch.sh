#!/usr/bin/env bash
# 4 x H200, third call of the next session (no carry), on the machine warm from next-a/next-b (PyG, NVML in
# /tmp/site). Issue 8: XGNN Table 5 on GCN+TW profiled on every rank. This session's rank-0 profile
# (XGNN 37.5 ms of GPU time per 5 batches vs WholeGraph's 21.6) spent 16 ms in all-reduce kernels
# waiting for a slower rank, and 23.5 ms of host time in cudaStreamSynchronize (WholeGraph 0.8 ms):
# the other ranks' profiles say which stage makes them late. Kept out of results/.
cd "$(dirname "$0")/../.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}:/tmp/site" NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/harness-out}
HARNESS_PROFILE_DIR=$OUT/profiles HARNESS_PROFILE_EPOCH=1 HARNESS_PROFILE_RANKS=all timeout 150 \
  python3 -m harness run xgnn.table5 --device cuda --param combos=gcn:TW --param epochs=2 \
  --out /tmp/profiled-runs --no-report 2>&1 | tail -3
# Issue 6: one profiled products GAT epoch of ours (0076: 5.79 s per epoch, 6.3x its GCN; the paper's
# WholeGraph GAT is 3.5x its GCN): which of the per-head g-SpMMs, the SDDMM and the edge softmax costs.
HARNESS_PROFILE_DIR=$OUT/profiles HARNESS_PROFILE_EPOCH=1 timeout 90 python3 -m harness run wholegraph.table5 \
  --device cuda --param datasets=ogbn-products --param models=gat --impl wholegraph --out /tmp/profiled-runs \
  --no-report 2>&1 | tail -2
ls "$OUT/profiles" && tar czf "$OUT/profiles.tgz" -C "$OUT" profiles && rm -rf "$OUT/profiles"   # 8 files come back at most
# Issue 4: the p2p_shared kernel geometry at 512 B rows (0070: 86% of the n/(n-1) x peer-copy ceiling
# on 2 GPUs, 84% on 4 with 8 blocks per SM x 256 threads, 4 loads in flight; the target is 90%), on 2
# and on 4 GPUs, with NCCL alltoallv in the same run.
D=.ci/device.sh
L=4x256u4,16x256u4,8x256u8,16x256u8,8x512u4,32x128u8,8x256u2,16x512u8
$D --limit 120 -- wholegraph.gather --device cuda --gpus 2 --impl p2p_shared,nccl_alltoallv,ceiling_peer_copy \
  --param row_bytes=512 --param p2p_launch=$L --label h200x4-2gpu_wholegraph.gather-launch
$D --limit 120 --pack -- wholegraph.gather --device cuda --impl p2p_shared,nccl_alltoallv,ceiling_peer_copy \
  --param row_bytes=512 --param p2p_launch=$L --label h200x4_wholegraph.gather-launch
