#!/usr/bin/env bash
# 4 x H200, third call of the next session, on the machine warm from next-a/next-b (PyG, NVML in
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
ls "$OUT/profiles" && tar czf "$OUT/profiles.tgz" -C "$OUT" profiles && rm -rf "$OUT/profiles"   # 8 files come back at most
