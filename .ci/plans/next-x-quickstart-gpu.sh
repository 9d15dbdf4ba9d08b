#!/usr/bin/env bash
# One GPU (nvidia-h100-x1 or nvidia-h200, whichever is lent), nothing carried. Issue 38 item 5:
# docs/quickstart-gpu.md followed literally from a fresh clone of this tree, as a user would on their
# own GPU machine, on a machine without network: install (its offline variant: a venv over the
# image's torch, CuPy, pip and setuptools, `python -m pip install --no-index --no-build-isolation
# --no-deps -e .`; PYTHONPATH, the page's other way, only where that fails: steps.txt says which), `harness env`, `list`, `data list`, the dry runs of WholeGraph
# Tables I and V, `run wholegraph.table1 --time-budget 4m`, `report`, `compare --reference results`
# and `compare RUN RUN`. Every step's exit code and milliseconds go to steps.txt (the page's "how
# long"), its output to quickstart.log; the run with its report comes back in quickstart-run.tgz,
# the table and figure beside it. Expected: every step rc 0 but compare --reference (4 on an H100:
# no committed H100 run; 0 or 1 on an H200), the run ends within 4 min with Table I's UM and P2P rows
# and one verdict line; on an 80 GB GPU the 128 GB local/P2P points are skipped rows saying they need
# more than a GPU here. About 7 minutes.
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/harness-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
LOG="$OUT/quickstart.log"; : > "$LOG"; : > "$OUT/steps.txt"
step() {   # step NAME LIMIT_S COMMAND...: its output to the log, its exit code and time to steps.txt
  local name=$1 limit=$2 t0 rc; shift 2; t0=$(date +%s%N)
  echo "=== $name: $*" >> "$LOG"
  timeout --signal=INT --kill-after=20 "$limit" "$@" >> "$LOG" 2>&1; rc=$?
  printf '%-20s rc %3s %8s ms\n' "$name" "$rc" "$(( ($(date +%s%N) - t0) / 1000000 ))" | tee -a "$OUT/steps.txt"
  return $rc
}
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"

# a fresh clone: the committed tree alone, no runs/, data/ or caches of this one
SRC=$PWD; FRESH=/tmp/quickstart/harness
rm -rf /tmp/quickstart && mkdir -p /tmp/quickstart
if git -C "$SRC" rev-parse --verify HEAD > /dev/null 2>&1; then
  step clone 60 git clone -q "$SRC" "$FRESH"
else
  step copy 60 cp -a "$SRC" "$FRESH" && rm -rf "$FRESH/runs" "$FRESH/data" "$FRESH/report"
fi
cd "$FRESH" || exit 1

# 1. install, offline: the image has torch and CuPy; no index, no build isolation
INSTALL=pythonpath
if step venv 60 python3 -m venv --system-site-packages --without-pip .venv && . .venv/bin/activate \
   && step install 240 python -m pip install --no-index --find-links "$SRC/.wheels" --no-build-isolation \
        --no-deps -e .; then
  INSTALL=venv
else
  command -v deactivate > /dev/null && deactivate
  export PYTHONPATH=$PWD
fi
PY=$(command -v python || command -v python3)
echo "install: $INSTALL; harness from $(cd / && $PY -c 'import harness, os; print(os.path.dirname(harness.__file__))')" \
  | tee -a "$OUT/steps.txt"

# 2.-5. the machine, the tables, the data, the plans
step env 120 "$PY" -m harness env
step list 120 "$PY" -m harness list
step data-list 60 "$PY" -m harness data list
step dry-run-table1 90 "$PY" -m harness run wholegraph.table1 --dry-run
step dry-run-table5 120 "$PY" -m harness run wholegraph.table5 --dry-run

# 6.-8. the run within its budget, its report, the comparisons
step run-table1 300 "$PY" -m harness run wholegraph.table1 --time-budget 4m
RUN=$(ls -d runs/*_wholegraph.table1 2> /dev/null | tail -1)
echo "run: ${RUN:-none}" | tee -a "$OUT/steps.txt"
if [ -n "$RUN" ]; then
  step report 120 "$PY" -m harness report "$RUN"
  step compare-reference 120 "$PY" -m harness compare --reference results "$RUN"
  step compare-self 60 "$PY" -m harness compare "$RUN" "$RUN"
  tar czf "$OUT/quickstart-run.tgz" "$RUN"
  cp "$RUN/report/wholegraph/table1.md" "$RUN/report/wholegraph/table1.png" "$OUT/" 2> /dev/null
fi
echo "--- what the run printed last"; grep -A12 "^run [0-9]" "$LOG" | cut -c1-220
echo "--- dry-run totals and data lines"; grep -E "^(plan|estimate|data): " "$LOG" | cut -c1-200
echo "--- the table"; [ -f "$OUT/table1.md" ] && sed -n '1,30p' "$OUT/table1.md" | cut -c1-200
cat "$OUT/steps.txt"
