#!/usr/bin/env bash
# 2 GPUs (nvidia-h100-x2 or nvidia-h200-x2, whichever is lent; move results/ and reports/ out of the
# tree first). Issue 37 item 1 (the registry): the GPU paths whose implementations are now chosen by
# their registry traits, and the link ceilings now measured through their Ceiling contract under a
# RepeatBudget. About 8 minutes (limits: 300 + 90 + 75 s, plus the machine's start-up):
#   1. GPU tests that enumerate the registry: every gather variant on GPU ranks against the closed
#      form, every ceiling through its contract (tests/gpu/test_gather_gpu.py); the probes (UM, P2P,
#      local, host zero copy) and Table 1 end to end (tests/gpu/test_probes_gpu.py); every registered
#      placement policy's batches gathered on GPU ranks (tests/gpu/test_placement_measure_gpu.py);
#      the samplers (tests/gpu/test_sampling_gpu.py);
#   2. wholegraph.gather --quick on both GPUs: the every-implementation table, its series from the
#      registry (label, variant, colour), the ceilings beside them;
#   3. wholegraph.table1 --quick at 8 GB: the probes' memory need (device_memory) and UM's shorter
#      chain (managed) now come from their traits.
# What to expect: every test passes; in 2 every registered gather variant that runs on CUDA gives ok
# rows (the TMA variants and wholegraph_lib skipped with their reasons where the machine lacks them),
# the ceilings give peer_copy_bw / copy_all_bw / algbw rows with warmup_ms / repeat_ms in extra; in 3
# UM an order of magnitude above P2P (reference run 0001, 2 x H200 at 8 GB: 8.3 vs 0.59 us; --quick
# chases 1 GB, so the same order, not the same values). Any error row, or a
# skip that names an unknown trait or variant, is a regression of this branch.
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/harness-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH="$PWD"
timeout --signal=INT --kill-after=10 300 python3 -m pytest -q -m gpu -p no:cacheprovider \
  tests/gpu/test_gather_gpu.py tests/gpu/test_probes_gpu.py tests/gpu/test_placement_measure_gpu.py \
  tests/gpu/test_sampling_gpu.py 2>&1 | tee "$OUT/gpu-tests.log" | tail -12
.ci/device.sh --limit 90 -- wholegraph.gather --device cuda --quick --timeout 80 --label x2_wholegraph.gather
.ci/device.sh --limit 75 -- wholegraph.table1 --device cuda --quick --param sizes_gb=8 --timeout 65 \
  --label x2_wholegraph.table1
python3 - "$OUT/results" <<'PY'
import json, pathlib, sys
rows = [json.loads(l) for run in sorted(pathlib.Path(sys.argv[1]).iterdir()) if (run / "rows.jsonl").exists()
        for l in (run / "rows.jsonl").read_text().splitlines() if l.strip()]
for r in rows:
    mark = "ok " if r["status"] == "ok" else "!!!"
    value = f"{r['value']:.4g} {r['unit']}" if r["status"] == "ok" else str(r.get("reason"))[:120]
    print(f"{mark} {r['experiment']} {r['impl']} {r['metric']} {r['params'].get('mode', '')}: {value}")
PY
