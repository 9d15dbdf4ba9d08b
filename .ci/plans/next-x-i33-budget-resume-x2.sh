#!/usr/bin/env bash
# 2 GPUs (nvidia-h100-x2 or nvidia-h200-x2), carry .wheels/pyg and .wheels/dgl if at hand. Start it as
#   HARNESS_GIT_COMMIT=<sha> HARNESS_GIT_DIRTY=0 .ci/plans/next-x-i33-budget-resume-x2.sh
# (.ci/tree-state prints both). Issue 33 items 1-2, issues 37/38 on the lean runner, on GPUs:
# (1) provenance: device.sh prints "provenance: commit <sha>, dirty=0" and every manifest records them;
# (2) `run table5 --time-budget 3m` on 2 GPUs ends within 180 s timed from outside, report included, with
#     XGNN Table 5 and WholeGraph Table V each getting points (each table's group stops at its share);
# (3) a campaign cut by a time limit then resumed: `wholegraph.gather --gpus 2` stopped after 40 s (exit 130,
#     status interrupted, skipped rows "not measured: the run was interrupted"), then `--resume` of that run
#     measures only the points it lacks: the sitting's log names only those, the run ends complete with one
#     row set per point and two sittings, and an uninterrupted run has the same points. About 8 minutes.
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/harness-out}
mkdir -p "$OUT/results"
.ci/device.sh                     # installs carried wheels, shows the GPUs and the provenance; runs nothing
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH="$PWD:/tmp/site"
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

t0=$(date +%s%N)
timeout --signal=INT --kill-after=20 240 python3 -m harness run table5 --device cuda --gpus 2 --time-budget 3m \
  --out "$OUT/results" --label x2_table5-budget-3m > "$OUT/budget.log" 2>&1
echo "=== table5 --time-budget 3m: rc $?, $(ms "$t0") ms (must be <= 180000)"
grep -E "^(plan|budget|  [0-9]+ points have)" "$OUT/budget.log"
grep -E "^the time budget|^time budget|^  (wholegraph|xgnn)\.table5|^run " "$OUT/budget.log" | cut -c1-220

GATHER=(wholegraph.gather --device cuda --gpus 2 --param row_bytes=512 --timeout 100 --out "$OUT/results")
timeout --signal=INT --kill-after=20 40 python3 -m harness run "${GATHER[@]}" --label x2_gather-resume \
  --no-report > "$OUT/sitting1.log" 2>&1
echo "=== sitting 1 (cut at 40 s): rc $? (130 expected)"
run=$(ls -d "$OUT"/results/*_x2_gather-resume | tail -1)
t0=$(date +%s%N)
timeout --signal=INT --kill-after=20 200 python3 -m harness run "${GATHER[@]}" --resume "$run" --no-report \
  > "$OUT/sitting2.log" 2>&1
echo "=== sitting 2 (--resume): rc $?, $(ms "$t0") ms"
grep -E "^resuming|^run " "$OUT/sitting2.log"
timeout --signal=INT --kill-after=20 200 python3 -m harness run "${GATHER[@]}" --label x2_gather-whole --no-report \
  > "$OUT/whole.log" 2>&1
echo "=== uninterrupted run: rc $?"
python3 - "$run" "$(ls -d "$OUT"/results/*_x2_gather-whole | tail -1)" <<'PY'
import json, sys
from harness.store import load_run
a, b = (load_run(p) for p in sys.argv[1:3])
key = lambda r: (r["impl"], json.dumps(r["params"], sort_keys=True), r["metric"], r["status"])
print("resumed:", a.manifest["status"], "sittings", len(a.manifest.get("sittings", [])),
      "commits", a.manifest["git"].get("commits") or a.manifest["git"].get("commit"), "dirty", a.manifest["git"]["dirty"])
print("same points as the uninterrupted run:", sorted(map(key, a.rows)) == sorted(map(key, b.rows)),
      f"({len(a.rows)} vs {len(b.rows)} rows)")
print("rows measured twice:", len(a.rows) - len({key(r) for r in a.rows}))
PY
cd "$OUT" && tar czf results.tgz results && rm -rf results
