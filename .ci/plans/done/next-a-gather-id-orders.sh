#!/usr/bin/env bash
# 4 x H200 (no carry). Issue 4: 0089 (2 GPUs) showed p2p_shared reading every owner's rows in sequence
# (id_orders=owner_streams) no faster than random ids (631 vs 630 GB/s at 512 B): the 84-86% of the
# n/(n-1) x copy-engine ceiling is what SM reads over NVLink reach. This repeats it on 4 GPUs at all
# three row sizes, now with the legacy-IPC variant too (random 512 B: 20-36 GB/s, 18x below the VMM
# mapping of the same kind of allocation: sequential ids say whether its remote TLB is the cause).
cd "$(dirname "$0")/../.."
D=.ci/device.sh
$D --limit 200 --pack -- wholegraph.gather --device cuda --impl p2p_shared,nccl_alltoallv,ceiling_peer_copy \
  --param id_orders=owner_streams --label h200x4_wholegraph.gather-id-orders
# The profile the issue asks for: Nsight Compute on the gather kernel itself, 2 GPUs, 512 B rows
# (both ranks profiled; --clock-control none per METHOD.md). Speed-of-light and memory tables say
# whether the kernel is bound by NVLink traffic (lts/fabric throughput near peak) or by latency.
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}:/tmp/site" NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/harness-out}
timeout 240 ncu --target-processes all --clock-control none -k regex:gather_v -c 4 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
  -o "$OUT/ncu-gather" python3 -m harness run wholegraph.gather --device cuda --gpus 2 --impl p2p_shared \
  --param row_bytes=512 --repeats 2 --warmup 1 --out /tmp/ncu-runs --no-report 2>&1 | tail -5
for f in "$OUT"/ncu-gather*.ncu-rep; do
  [ -e "$f" ] && ncu --import "$f" --page details > "${f%.ncu-rep}.txt" 2>&1
done
ls -la "$OUT"
