#!/usr/bin/env bash
# Runs harness experiments and GPU tests on a lent GPU machine (DESIGN section 6).
#
#   .ci/device.sh [--tests] [--label L] -- RUN-ARGS...
#
# Puts the repo on PYTHONPATH, installs wheels carried in .wheels/*/ into /tmp/site,
# keeps NVLink multicast off, runs `python -m harness run RUN-ARGS --out $OUT/results`
# (run directories come back two folders deep) and prints a short table last.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/harness-out}
mkdir -p "$OUT/results"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
run_tests=0
pytest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --tests) run_tests=1; shift ;;
    --pytest) pytest_args+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
if ls .wheels/*/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .wheels/*/*.whl >/dev/null 2>&1 || echo "wheel install failed" >&2
  export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
nvidia-smi --query-gpu=index,name,memory.total,memory.used,driver_version --format=csv,noheader
nvidia-smi topo -m 2>/dev/null | head -12
status=0
if [ "$run_tests" = 1 ]; then
  python3 -m pytest -q -m gpu tests "${pytest_args[@]}" -p no:cacheprovider 2>&1 | tee "$OUT/gpu-tests.log" | tail -25
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
if [ $# -gt 0 ]; then
  python3 -m harness run "$@" --out "$OUT/results" --no-report 2>&1 | tee "$OUT/run.log" | grep -v "^\[" | tail -5
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  echo "--- results"
  python3 - "$OUT/results" <<'PY'
import json, pathlib, sys
for run in sorted(pathlib.Path(sys.argv[1]).iterdir()):
    for line in (run / "rows.jsonl").read_text().splitlines():
        r = json.loads(line)
        v = f"{r['value']:.4g} {r['unit']}" if r["status"] == "ok" else f"{r['status']}: {r.get('reason', '')[:70]}"
        p = " ".join(f"{k}={v}" for k, v in r["params"].items() if k not in ("placement",))
        print(f"{r['experiment']:18} {r['impl']:15} {p[:60]:60} {v}")
PY
fi
exit $status
