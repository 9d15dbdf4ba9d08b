#!/usr/bin/env bash
# 4 x H200, carry .wheels/nvml (pynvml for the NVLink counters). Issue 4: NVML's NVLink payload
# and raw (payload + protocol) byte counters while every rank gathers 512 B rows (p2p_shared,
# nccl_alltoallv) and during the one-way peer copy, on 2 and on 4 GPUs: ncu (0090's profile) could
# only see one rank's kernel at a time, and showed it latency-bound (SM 10%, DRAM 21% of peak).
# Issue 8: Fig. 10's GSG+UK with 9 synchronized epochs (0062's +PSA gain of 1.18x on a machine where
# the clique policy and the solver place the same partitions came from 3), Table 5 with 3 synced
# epochs, and one profiled epoch of each Table 5 system on GCN+TW (stages alone, then pipelined).
cd "$(dirname "$0")/../.."
D=.ci/device.sh
$D --limit 90 -- wholegraph.gather --device cuda --gpus 2 --impl p2p_shared,nccl_alltoallv,ceiling_peer_copy \
  --param row_bytes=512 --param link_counters=on --label h200x4-2gpu_wholegraph.gather-links
$D --limit 90 --pack -- wholegraph.gather --device cuda --impl p2p_shared,nccl_alltoallv,ceiling_peer_copy \
  --param row_bytes=512 --param link_counters=on --label h200x4_wholegraph.gather-links
$D --limit 150 -- xgnn.fig10 --device cuda --param combos=sage:UK --param synced_epochs=9 --param epochs=11 \
  --param max_edges=1.2e8 --label h200x4_xgnn.fig10-uk-synced9
$D --limit 120 --pack -- xgnn.table5 --device cuda --param synced_epochs=3 --param epochs=6 \
  --label h200x4_xgnn.table5-synced3
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}:/tmp/site" NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/harness-out}
for e in 1 2; do   # epoch 1: synchronized (S, E, T each alone); epoch 2: free-running (pipelined)
  HARNESS_PROFILE_DIR=$OUT/profiles HARNESS_PROFILE_EPOCH=$e HARNESS_PROFILE_RANKS=0,3 timeout 100 \
    python3 -m harness run xgnn.table5 --device cuda --param combos=gcn:TW --param synced_epochs=2 \
    --param epochs=3 --out /tmp/profiled-runs --no-report 2>&1 | tail -2
done
ls "$OUT/profiles" && tar czf "$OUT/profiles.tgz" -C "$OUT" profiles && rm -rf "$OUT/profiles"
ls -la "$OUT"
