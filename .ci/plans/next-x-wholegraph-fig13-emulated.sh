#!/usr/bin/env bash
# 4 GPUs (nvidia-h100-x4 or nvidia-h200-x4, whichever is lent; move results/ and reports/ out of the tree
# first). Issue 35 item 4: wholegraph.fig13 (scalability across nodes) on nodes emulated on one host,
# every configuration through torchrun on localhost (c10d rendezvous), in about 8.5 minutes:
#   A. papers100M (stand-in of 1.3e8 edges), GCN, GraphSAGE and GAT, Table V's pipeline and settings:
#      1. one node of 2 GPUs (GPUs 0,1): the baseline;
#      2. 2 emulated nodes of 2 GPUs: two torchrun node processes, GPUs 0,1 and 2,3, each its own
#         NCCL_HOSTID, so NCCL carries the gradient all-reduce between them over its network transport
#         (which one: NET lines of nccl-net.txt); each node holds its own replica of graph and features;
#      3. one node of 4 GPUs: the intra-node reference (the same 4 GPUs inside one node);
#   B. Friendster and UK_domain with GraphSAGE, the same three configurations;
#   C. on the 2 emulated nodes, wholegraph.gather with p2p_shared (each node's shards mapped, the other
#      node's rows through NCCL, rows checked against the closed form) beside nccl_alltoallv;
# then the speedups, and the report of fig13 (fig13.md/png) from these runs.
#
# Expected: every training point ok. 2 emulated nodes x 2 over 1 x 2: 1.7x-2.0x (each rank trains half
# the mini-batches, the stores stay within a node, and only ~1-2 MB of gradients per step cross between
# the nodes); GAT nearest 2x (most compute per batch), GCN/SAGE lower (the all-reduce and the epoch's
# fixed costs weigh more). 2 x 2 against 1 x 4: about 1x, maybe a little faster (a node's replica is
# split over 2 GPUs instead of 4, so half its reads are local instead of a quarter) or slower (the
# all-reduce crosses NCCL's network transport). manifest.json of the 2-node runs: topology with
# "emulated": true, label "2 nodes x 2 GPUs, emulated nodes (one host)". C: p2p_shared ok (its rows
# checked), its bandwidth between nccl_alltoallv's and the one-node p2p_shared (half its rows come
# through NCCL). Limits add up to 500 s.
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/harness-out}; mkdir -p "$OUT/results" "$OUT/logs"      # 8 files come back: logs/ is packed
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH="$PWD" OMP_NUM_THREADS=4
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
# DEVICE=cpu EXTRA="--quick ..." runs the same steps on CPU ranks (a smoke test of this script)
RUN=(-m harness run --device "${DEVICE:-cuda}" --out "$OUT/results" --no-report ${EXTRA:-})
TR=(python3 -m torch.distributed.run --max-restarts 0)
# GraphSAGE first (the paper's one number); accuracy on 2048 nodes per split (not what this figure shows)
A=(wholegraph.fig13 --param datasets=ogbn-papers100M --param models=sage,gcn,gat --param eval_nodes=2048)
B=(wholegraph.fig13 --param datasets=friendster,uk-2007-05 --param models=sage --param eval_nodes=2048)
C=(wholegraph.gather --quick --impl p2p_shared,nccl_alltoallv --param row_bytes=512)

one_node() {   # one_node LIMIT GPUS LABEL ARGS...: torchrun --standalone on the GPUs listed
  local limit=$1 gpus=$2 label=$3 n; shift 3; n=$(( $(tr -cd , <<< "$gpus" | wc -c) + 1 ))
  echo "=== 1 node x $n GPUs ($gpus): $*" | tee -a "$OUT/run.log"
  CUDA_VISIBLE_DEVICES=$gpus timeout --signal=INT --kill-after=20 "$limit" "${TR[@]}" --standalone \
    --nproc-per-node "$n" "${RUN[@]}" "$@" --timeout $((limit - 20)) --label "$label" >> "$OUT/run.log" 2>&1
  echo "rc $?" | tee -a "$OUT/run.log"
}
two_nodes() {  # two_nodes LIMIT LABEL ARGS...: 2 torchrun node processes of 2 GPUs on localhost
  local limit=$1 label=$2 port=$((29500 + RANDOM % 1000)) pids=() rcs=() n; shift 2
  echo "=== 2 emulated nodes x 2 GPUs: $*" | tee -a "$OUT/run.log"
  for n in 0 1; do
    CUDA_VISIBLE_DEVICES=$((2 * n)),$((2 * n + 1)) NCCL_HOSTID="fig13-node$n" NCCL_DEBUG=INFO \
      NCCL_DEBUG_SUBSYS=INIT,NET timeout --signal=INT --kill-after=20 "$limit" "${TR[@]}" --nnodes 2 \
      --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint "127.0.0.1:$port" --rdzv-id "$label" \
      "${RUN[@]}" "$@" --timeout $((limit - 20)) --label "$label" > "$OUT/logs/$label-node$n.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; rcs+=($?); done
  echo "rc ${rcs[*]}" | tee -a "$OUT/run.log"
  grep -v "NCCL INFO" "$OUT/logs/$label-node0.log" >> "$OUT/run.log"
  grep -h "NCCL INFO.*NET/\|NCCL INFO.*via NET\|NCCL INFO.*Using network" "$OUT/logs/$label"-node*.log \
    | sed 's/^.*NCCL INFO //' | sort | uniq -c | head -12 >> "$OUT/nccl-net.txt"
}

one_node 110 0,1 x4_fig13-1x2-papers "${A[@]}"
two_nodes 90 x4_fig13-2x2-emulated-papers "${A[@]}"
one_node 75 0,1,2,3 x4_fig13-1x4-papers "${A[@]}"
one_node 70 0,1 x4_fig13-1x2-friendster-uk "${B[@]}"
two_nodes 50 x4_fig13-2x2-emulated-friendster-uk "${B[@]}"
one_node 45 0,1,2,3 x4_fig13-1x4-friendster-uk "${B[@]}"
two_nodes 60 x4_gather-2x2-emulated "${C[@]}"
echo "--- NCCL's transport between the emulated nodes"; cat "$OUT/nccl-net.txt"
python3 - "$OUT/results" <<'PY'
import json, pathlib, sys
rows = []
for run in sorted(pathlib.Path(sys.argv[1]).iterdir()):
    if (run / "rows.jsonl").exists():
        m = json.loads((run / "manifest.json").read_text())
        print(f"{run.name}: {m.get('status')}, topology {m.get('topology', {}).get('label', '(none)')}")
        rows += [json.loads(l) for l in (run / "rows.jsonl").read_text().splitlines() if l.strip()]
for r in rows:
    if r["status"] != "ok":
        print(f"!!! {r['experiment']} {r['impl']} {r['params'].get('dataset', '')} {r['params'].get('model', '')}: "
              f"{r['status']}: {str(r.get('reason'))[:150]}")
t = {}
for r in rows:
    if r["experiment"] == "wholegraph.fig13" and r["metric"] == "epoch_time" and r["status"] == "ok":
        p = r["params"]
        t[(p["dataset"], p["model"], p["nodes"], p["ranks_per_node"])] = r["value"]
        topo = r.get("extra", {}).get("topology", {}).get("label", "")
        print(f"fig13 {p['dataset']:16} {p['model']:4} {p['nodes']} x {p['ranks_per_node']}: {r['value']:.3f} s "
              f"({r['extra'].get('timed_epochs')} epochs, {r['extra'].get('timed_batches_per_gpu')} batches/GPU)  {topo}")
print("--- speedups (expected: 2x2 / 1x2 1.7-2.0x; 2x2 vs 1x4 about 1x)")
for (ds, model, nodes, per), v in sorted(t.items()):
    if nodes == 2:
        base, four = t.get((ds, model, 1, per)), t.get((ds, model, 1, 2 * per))
        print(f"{ds:16} {model:4}: 2 x {per} over 1 x {per} " + (f"{base / v:.2f}x" if base else "-")
              + "; 1 x 4 over 1 x 2 " + (f"{base / four:.2f}x" if base and four else "-")
              + "; 2 x 2 vs 1 x 4 " + (f"{four / v:.2f}x" if four else "-"))
for r in rows:
    if r["experiment"] == "wholegraph.gather" and r["metric"] == "algbw" and r["status"] == "ok":
        print(f"gather {r['impl']:15} world {r['world_size']}: {r['value']:.1f} GB/s  "
              f"{str(r.get('extra', {}).get('where', ''))[:120]}")
PY
timeout 60 python3 -m harness report $(ls -d "$OUT"/results/*_x4_fig13-*) --out "$OUT/report" > /dev/null 2>&1 \
  && cp "$OUT"/report/wholegraph/fig13.md "$OUT"/report/wholegraph/fig13.png "$OUT"/ 2>/dev/null
tar czf "$OUT/results.tgz" -C "$OUT" results report 2>/dev/null && rm -rf "$OUT/results" "$OUT/report"
tar czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$OUT/logs"
