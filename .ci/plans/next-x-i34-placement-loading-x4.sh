#!/usr/bin/env bash
# 4 GPUs (nvidia-h100-x4 or nvidia-h200-x4), carry .wheels/metis (pymetis: DGL's METIS parts); move results/
# and reports/ out of the tree first. Issue 34 item 2 and issue 35 item 6: ICS'22's loading figures
# re-measured with the fixed method, PaGraph in every run, and Fig. 1.
# - The measured path's GPU tests first (fused and split gathers, 128-float rows, regions of 3 batches).
# - Figs. 4, 5, 6 (reddit x0.2, yelp x0.1, products x0.04; scaled batches) on the measured topologies 2GPU,
#   (2+2)GPU, 4GPU: each timed launch gathers consecutive replayed batches up to the rows of one of the
#   paper's mini-batches (batch + 3 x 8192), 5 passes after L2 flushes (whiskers), the launch floor of
#   the same launches reading one row per tier; PaGraph (bit-row partition, out-degree cache) beside
#   NAIVE, RAND, METIS and Our; rows record the host rows' 4 KiB pages / 2 MiB regions per batch.
# - Fig. 1 (reddit x0.2, the paper's batch sizes): PaGraph and DGL (METIS) at 0.2N on 2 and 4 GPUs,
#   loading beside one training step of GraphSAGE 3 x 512.
# - Figs. 11 and 10 at the paper's batch sizes (MAG240M x0.005, papers100M x0.01).
# Each step stops at its limit (rows written stay). About 8.5 minutes.
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/harness-out}; mkdir -p "$OUT"
MEASURED='2GPU,(2+2)GPU,4GPU'
timeout --signal=INT 75 .ci/device.sh --tests --pytest tests/gpu/test_placement_measure_gpu.py --pytest -k --pytest several_batches
.ci/device.sh --limit 95 -- placement.fig4 --device cuda --param topologies="$MEASURED" --param max_batches=32 \
  --param pagraph_cap_s=40 --timeout 60 --label x4_placement.fig4-issue34
.ci/device.sh --limit 95 -- placement.fig5 --device cuda --param topologies="$MEASURED" --param max_batches=32 \
  --param pagraph_cap_s=40 --timeout 60 --label x4_placement.fig5-issue34
.ci/device.sh --limit 70 -- placement.fig6 --device cuda --param topologies="$MEASURED" --param max_batches=32 \
  --param pagraph_cap_s=40 --timeout 60 --label x4_placement.fig6-issue34
.ci/device.sh --limit 60 -- placement.fig1 --device cuda --param max_batches=16 --param pagraph_cap_s=40 \
  --timeout 50 --label x4_placement.fig1
.ci/device.sh --limit 75 -- placement.fig11 --device cuda --scale 0.005 --param batch_sizes=paper \
  --param topologies="$MEASURED" --param max_batches=16 --timeout 60 --label x4_placement.fig11-x0.005-paper
.ci/device.sh --limit 75 --pack -- placement.fig10 --device cuda --scale 0.01 --param batch_sizes=paper \
  --param topologies="$MEASURED" --param max_batches=16 --timeout 60 --label x4_placement.fig10-x0.01-paper
# what to look at first: per measured point, the slowest GPU's ms/batch, its spread, the floor, the verdict
# on overhead, and NAIVE / RAND's host pages; a point that never ran shows as skipped
mkdir -p "$OUT/unpacked" && for t in "$OUT"/results*.tgz; do tar xzf "$t" -C "$OUT/unpacked"; done
python3 - "$OUT/unpacked/results" <<'PY'
import json, pathlib, sys
for run in sorted(pathlib.Path(sys.argv[1]).iterdir()):
    rows = [json.loads(line) for line in (run / "rows.jsonl").read_text().splitlines()]
    meas = [r for r in rows if r["params"].get("mode") == "measured" and r["metric"] == "loading_time"]
    print(f"== {run.name}: {sum(r['status'] == 'ok' for r in rows)} ok, "
          f"{sum(r['status'] == 'skipped' for r in rows)} skipped, {sum(r['status'] == 'error' for r in rows)} errors")
    for r in meas:
        p, e, s = r["params"], r.get("extra") or {}, r.get("stats") or {}
        if r["status"] != "ok":
            print(f"  {r['impl']:10} {p['topology']:9} {p['buffer']:5} {r['status']}: {(r.get('reason') or '')[:90]}")
            continue
        print(f"  {r['impl']:10} {p['topology']:9} {p['buffer']:5} {r['value']:.4g} ms [{s.get('p10', 0):.3g}-"
              f"{s.get('p90', 0):.3g}] floor {e.get('launch_floor_ms') or 0:.3g} model {e.get('modeled_ms', 0):.3g} "
              f"k={e.get('batches_per_region')} rows={e.get('rows_per_region')} bound={e.get('overhead_bound')} "
              f"pages4k={e.get('host_pages_4k_per_batch')} reg2m={e.get('host_regions_2m_per_batch')} "
              f"gpus={e.get('per_gpu_ms')}")
    for r in rows:
        if r["metric"] in ("train_time", "loading_ratio") and r["status"] == "ok":
            print(f"  {r['impl']:10} {r['params']['topology']:9} {r['metric']} {r['value']:.4g}")
PY
