#!/usr/bin/env bash
# Runs harness experiments and GPU tests on a lent GPU machine (docs/machines.md#running-on-them).
#
#   .ci/device.sh [--tests] [--pytest ARG] [--pack] [--limit SECONDS] -- RUN-ARGS...
#
# Puts the repo on PYTHONPATH, installs wheels carried in .wheels/*/ into /tmp/site,
# keeps NVLink multicast off, runs `python -m harness run RUN-ARGS --out $OUT/results`
# and prints a short table last.
#
# Provenance: the copied tree's own .git can be older than the tree, so whoever copies the tree
# names its commit and whether it was clean, and every run records them:
#   HARNESS_GIT_COMMIT=<sha> HARNESS_GIT_DIRTY=<0|1> .ci/plans/<plan>.sh
# (.ci/tree-state prints both for the checkout that is copied). Without HARNESS_GIT_DIRTY=0 the
# runs are recorded dirty, and `harness promote` refuses them. Logs are appended, so several invocations can share one
# device call (.ci/plans/*.sh). --limit stops the run after SECONDS (rows already written
# stay); --pack turns $OUT/results into $OUT/results.tgz (results-2.tgz, ... for later packs), because only 8 files come back
# from a call (each run directory holds two).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/harness-out}
mkdir -p "$OUT/results"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
run_tests=0
pack=0
limit=0
pytest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --tests) run_tests=1; shift ;;
    --pytest) pytest_args+=("$2"); shift 2 ;;
    --pack) pack=1; shift ;;
    --limit) limit="$2"; shift 2 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
# Wheels are installed together (some share top-level folders) and once per machine: a warm
# machine keeps /tmp/site between calls, so a later call carrying other wheels adds them.
missing=0
for w in .wheels/*/*.whl; do
  [ -e "$w" ] || continue
  ls -d /tmp/site/"$(basename "$w" | cut -d- -f1)"-*.dist-info >/dev/null 2>&1 || missing=1
done
if [ "$missing" = 1 ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .wheels/*/*.whl >/dev/null 2>&1 || echo "wheel install failed" >&2
fi
[ -d /tmp/site ] && export PYTHONPATH="$PYTHONPATH:/tmp/site"
if [ -z "${HARNESS_GIT_COMMIT:-}" ]; then
  echo "warning: HARNESS_GIT_COMMIT is not set: runs record this copy's own .git, which may be older than the" \
       "tree; start the plan as HARNESS_GIT_COMMIT=<sha> HARNESS_GIT_DIRTY=<0|1> (.ci/tree-state prints both)" | tee -a "$OUT/run.log" >&2
elif [ "${HARNESS_GIT_DIRTY:-}" != 0 ] && [ "${HARNESS_GIT_DIRTY:-}" != 1 ]; then
  echo "warning: HARNESS_GIT_COMMIT is set without HARNESS_GIT_DIRTY=0 or 1: runs are recorded as measured on a" \
       "dirty tree, and promote refuses them" | tee -a "$OUT/run.log" >&2
else
  echo "provenance: commit $HARNESS_GIT_COMMIT, dirty=$HARNESS_GIT_DIRTY" | tee -a "$OUT/run.log"
fi
nvidia-smi --query-gpu=index,name,memory.total,memory.used,driver_version --format=csv,noheader
nvidia-smi topo -m 2>/dev/null | head -12
status=0
if [ "$run_tests" = 1 ]; then
  where=(tests)
  for a in "${pytest_args[@]}"; do case "$a" in tests/*) where=() ;; esac; done
  python3 -m pytest -q -m gpu "${where[@]}" "${pytest_args[@]}" -p no:cacheprovider 2>&1 | tee -a "$OUT/gpu-tests.log" | tail -25
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
if [ $# -gt 0 ]; then
  to=(); [ "$limit" -gt 0 ] && to=(timeout --signal=INT --kill-after=20 "$limit")
  echo "=== harness run $*" | tee -a "$OUT/run.log"
  "${to[@]}" python3 -m harness run "$@" --out "$OUT/results" --no-report 2>&1 | tee -a "$OUT/run.log" | grep -v "^\[" | tail -5
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  echo "--- results"
  python3 - "$OUT/results" <<'PY'
import json, pathlib, sys
for run in sorted(pathlib.Path(sys.argv[1]).iterdir())[-1:]:
    for line in (run / "rows.jsonl").read_text().splitlines():
        r = json.loads(line)
        v = f"{r['value']:.4g} {r['unit']}" if r["status"] == "ok" else f"{r['status']}: {r.get('reason', '')[:70]}"
        p = " ".join(f"{k}={v}" for k, v in r["params"].items() if k not in ("placement",))
        print(f"{r['experiment']:18} {r['impl']:15} {p[:60]:60} {v}")
PY
fi
if [ "$pack" = 1 ] && [ -d "$OUT/results" ]; then
  # a second --pack in the same call must not overwrite the first archive
  tgz="$OUT/results.tgz"; n=1
  while [ -e "$tgz" ]; do n=$((n + 1)); tgz="$OUT/results-$n.tgz"; done
  tar czf "$tgz" -C "$OUT" results && rm -rf "$OUT/results"
fi
exit $status
