#!/usr/bin/env bash
# 4 GPUs (nvidia-h100-x4 or nvidia-h200-x4; move results/ and reports/ out of the tree first). Issue 34,
# the pathological numbers, each measured where its caption will read it (rows of new fields):
# 1. XGNN Fig. 14 on PA and UK with the rows the original KHop walks (row_positions_per_epoch,
#    longest_row_per_kernel, kernels_per_epoch): is the original's 656 ms on UK (76x the batched
#    kernel while remote bytes fall 3.8x) the serial walk of the stand-in's hub rows, one thread each?
# 2. WholeGraph Fig. 11 on products, GCN and GraphSAGE, native and PyG layers, each layer alone on one
#    mini-batch after training (epoch_time extra layer_profile; PyG GCN's normalization timed apart):
#    where the PyG GCN layer's 5.74 s against 1.16 s for SAGE goes. Epochs capped at 32 mini-batches
#    (a diagnosis run: the layer profile is uncapped, the epoch times are extrapolated).
# 3. WholeGraph Table IV memory (papers100M, GraphSAGE, our pipeline) on 4 GPUs and on 1, with what the
#    device's used memory is made of (memory_total extra device_used_parts: torch's reserve, this
#    process outside it, other processes on the GPU) and nvidia-smi's per-process list every second
#    during the 4-GPU run ($OUT/compute-apps.csv): 20.4 GiB per GPU on 4 against 13.8 on 1.
# About 8 minutes.
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/harness-out}; mkdir -p "$OUT"
.ci/device.sh --limit 90 -- xgnn.fig14 --device cuda --timeout 80 --label x4_xgnn.fig14-row-walks
.ci/device.sh --limit 180 -- wholegraph.fig11 --device cuda --impl wholegraph --param datasets=ogbn-products \
  --param models=gcn,sage --param max_batches=32 --timeout 170 --label x4_wholegraph.fig11-layer-profile
nvidia-smi --query-compute-apps=timestamp,gpu_bus_id,pid,used_memory --format=csv -l 1 > "$OUT/compute-apps.csv" &
SMI=$!
.ci/device.sh --limit 110 -- wholegraph.table5 --device cuda --gpus 4 --impl wholegraph \
  --param datasets=ogbn-papers100M --param models=sage --timeout 100 --label x4_wholegraph.table4-used-parts
kill "$SMI"
.ci/device.sh --limit 110 --pack -- wholegraph.table5 --device cuda --gpus 1 --impl wholegraph \
  --param datasets=ogbn-papers100M --param models=sage --timeout 100 --label x4-1gpu_wholegraph.table4-used-parts
python3 - "$OUT/compute-apps.csv" <<'PY'
import collections, csv, sys
peak = collections.defaultdict(int)          # (gpu, pid) -> the most MiB nvidia-smi listed
for row in csv.reader(open(sys.argv[1])):
    if len(row) == 4 and row[3].strip().endswith("MiB"):
        peak[(row[1].strip(), row[2].strip())] = max(peak[(row[1].strip(), row[2].strip())], int(row[3].split()[0]))
for gpu in sorted({g for g, _ in peak}):
    procs = sorted(((mib, pid) for (g, pid), mib in peak.items() if g == gpu), reverse=True)
    print(gpu, len(procs), "processes:", ", ".join(f"pid {pid} {mib} MiB" for mib, pid in procs))
PY
