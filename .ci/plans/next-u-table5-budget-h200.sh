#!/usr/bin/env bash
# 1 x H200, carry .wheels/pyg (torch-sparse/torch-scatter for PyG's sampler) and .wheels/dgl. Issue 30: the plan
# and a time budget for the headline command. (1) `run table5 --dry-run` must answer in seconds (no data, no
# GPU work beyond `harness list`) with a per-point estimate from the committed 1xH200/2xH200/4xH200 runs and a
# total; (2) `run table5 --time-budget ${BUDGET:-5m}` must end within the budget (timed from outside) with every
# point of WholeGraph Table V and XGNN Table 5 holding a row: measured (at reduced fidelity where the budget
# needed it: rows' `fidelity`), or skipped with its reason (a package, or "the time budget ... ended before this
# point"), the report written beside the run and one verdict line per artifact printed. About 6 minutes.
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/harness-out}
BUDGET=${BUDGET:-5m}
mkdir -p "$OUT/results"
.ci/device.sh                     # installs the carried wheels into /tmp/site and shows the GPU; runs nothing
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH="$PWD:/tmp/site"
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

t0=$(date +%s%N)
python3 -m harness run table5 --device cuda --dry-run > "$OUT/dry-run.txt" 2>&1
echo "=== dry-run: rc $?, $(ms "$t0") ms"
grep -E "^(plan|estimate|budget|  )" "$OUT/dry-run.txt" | tail -6

t0=$(date +%s%N)
timeout --signal=INT --kill-after=30 $(( $(python3 -c "from harness.plan import parse_duration as p; print(int(p('$BUDGET')))") + 60 )) \
  python3 -m harness run table5 --device cuda --time-budget "$BUDGET" --out "$OUT/results" \
  --label "h200x1_table5-budget-$BUDGET" > "$OUT/budget-run.log" 2>&1
echo "=== budgeted run ($BUDGET): rc $?, $(ms "$t0") ms"
head -8 "$OUT/budget-run.log"
grep "^\[" "$OUT/budget-run.log" | cut -c1-200 | sed -n '1,3p;$p'
grep -E "^the time budget|^time budget" "$OUT/budget-run.log"
sed -n '/^rows: /,$p' "$OUT/budget-run.log" | cut -c1-240
python3 - "$OUT/results" <<'PY'
import collections, json, pathlib, sys
run = sorted(pathlib.Path(sys.argv[1]).iterdir())[-1]
m = json.loads((run / "manifest.json").read_text())
rows = [json.loads(line) for line in (run / "rows.jsonl").read_text().splitlines()]
points = collections.OrderedDict()
for r in rows:
    key = (r["experiment"], r["impl"], r["params"].get("dataset"), r["params"].get("model"))
    points.setdefault(key, r)
kinds = collections.Counter()
for (exp, impl, ds, model), r in points.items():
    kind = "ok" if r["status"] == "ok" else f"{r['status']}: {r.get('reason', '')[:70]}"
    if r["status"] == "ok":
        kind += f" at level {r['fidelity']['level']}" if r.get("fidelity") else " at full fidelity"
    kinds[(exp, impl, kind)] += 1
print(f"--- {run.name}: status {m['status']}, {len(points)} points (54 expected), counts {m['counts']}")
for (exp, impl, kind), n in sorted(kinds.items()):
    print(f"{exp:18} {impl:15} {n:3} x {kind}")
b = m.get("budget", {})
print(f"budget: {b.get('seconds', 0):.0f} s for points, ended {b.get('ended')}, planned estimate "
      f"{b.get('planned_estimate_s', 0):.0f} s + {b.get('planned_unknown')} unknown; failed refinements "
      f"{len(b.get('refinements_failed', []))}")
print("report files:", sorted(str(p.relative_to(run)) for p in (run / "report").rglob("*.md"))[:12])
PY
