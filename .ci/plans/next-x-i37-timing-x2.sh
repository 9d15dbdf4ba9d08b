#!/usr/bin/env bash
# 2 GPUs (nvidia-h200-x2 preferred: the references below are H200 runs; nvidia-h100-x2 checks everything
# but the comparison with them). No wheels. Issue 37 item 3, the one timing engine on CUDA:
#   0. GPU tests: tests/gpu/test_timing_gpu.py (CUDA-event laps and spans, phases with and without a
#      device sync, a time budget adding repeats, two NCCL ranks running the slowest rank's budget), the
#      probes' GPU tests (experiments/kit/probes.py, moved from impls/probes/bench.py), the measured
#      placement loading's (experiments/kit/placement_loading.py, moved from impls/gather), the training
#      pipelines' on 2 GPUs (their epochs' stage times now from harness.timing.Phases) and XGNN Fig. 6(b)'s
#      VMM chase (tests/gpu/test_vmm_gpu.py, its chase now from experiments/kit/probes.py);
#   1. wholegraph.gather at 512 B on 2 GPUs, as reference run 0169 (p2p_shared, p2p_push, ceiling_peer_copy):
#      now under time budgets (warm-up 25 ms, repeats 100 ms, the old 3 / 20 as floors);
#   2. wholegraph.unique on 1 GPU, products, hops 1-2, as reference run 0144 (hash_append, dense_append, sort);
#   3. wholegraph.sampling on 1 GPU, products, minibatch and hop, path_doubling, as reference run 0145
#      (seed batches now drawn per call, outside the timed region);
#   4. the device marks inside experiments, by counts (--quick): mggcn.fig5 (operations summed by Spans) and
#      xgnn.fig14 (the sampler's calls summed by Spans);
# then per point of steps 1-3: the reference's value and repeats beside the new ones. Expected: every row ok;
# repeats >= the reference's (more for points under 5 ms); medians within 5% of the reference (gathers)
# or 10% (unique, sampling) on H200; extra.warmup_ms = 25 and extra.repeat_ms = 100 on the new rows.
# About 7.5 minutes; the limits add up to 535 s.
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/harness-out}; mkdir -p "$OUT"
timeout --signal=INT --kill-after=10 200 .ci/device.sh --tests --pytest tests/gpu/test_timing_gpu.py \
  --pytest tests/gpu/test_probes_gpu.py --pytest tests/gpu/test_placement_measure_gpu.py \
  --pytest tests/pipelines/test_pipelines_gpu.py \
  --pytest "tests/gpu/test_vmm_gpu.py::test_fig6b_chase_reads_the_owners_shard_through_the_continuous_range"
.ci/device.sh --limit 110 -- wholegraph.gather --device cuda --gpus 2 --param row_bytes=512 \
  --impl p2p_shared,p2p_push,ceiling_peer_copy --timeout 110 --label x2_i37-gather-budget
.ci/device.sh --limit 75 -- wholegraph.unique --device cuda --gpus 1 --impl hash_append,dense_append,sort \
  --param datasets=ogbn-products --param hops=1,2 --timeout 65 --label x1_i37-unique-budget
.ci/device.sh --limit 75 -- wholegraph.sampling --device cuda --gpus 1 --impl path_doubling \
  --param kinds=minibatch,hop --param datasets=ogbn-products --timeout 65 --label x1_i37-sampling-budget
.ci/device.sh --limit 40 -- mggcn.fig5 --device cuda --quick --timeout 35 --label x1_i37-mggcn-fig5-spans
.ci/device.sh --limit 35 -- xgnn.fig14 --device cuda --quick --timeout 30 --label i37-xgnn-fig14-spans
python3 - "$OUT/results" <<'PY'
import json, pathlib, sys
refs = {"wholegraph.gather": "0169", "wholegraph.unique": "0144", "wholegraph.sampling": "0145"}
def rows(run):
    return [json.loads(l) for l in (run / "rows.jsonl").read_text().splitlines() if l.strip()]
def key(r):
    return (r["experiment"], r["impl"], r["metric"], json.dumps(r["params"], sort_keys=True), r["world_size"])
ref = {}
for exp, rid in refs.items():
    for run in pathlib.Path("results").glob(f"{rid}_*"):
        ref.update({key(r): r for r in rows(run) if r["status"] == "ok"})
for run in sorted(pathlib.Path(sys.argv[1]).iterdir()):
    got = rows(run)
    bad = [r for r in got if r["status"] != "ok"]
    print(f"=== {run.name}: {len(got) - len(bad)} ok, {len(bad)} not")
    for r in bad:
        print(f"!!! {r['impl']} {r['params']}: {r['status']}: {str(r.get('reason'))[:160]}")
    for r in got:
        if r["status"] != "ok" or r["metric"] not in ("time", "peer_copy_bw", "algbw"):
            continue
        old = ref.get(key(r))
        extra = r.get("extra") or {}
        budget = f"budget {extra.get('warmup_ms')}/{extra.get('repeat_ms')} ms" if "repeat_ms" in extra else "counts"
        line = f"  {r['impl']:16} {r['metric']:13} {r['value']:10.4g} {r['unit']:5} x{r['stats']['repeats']:<4} {budget}"
        if old:
            line += (f" | ref {old['value']:10.4g} x{old['stats']['repeats']:<4} new/ref {r['value'] / old['value']:.3f}"
                     + ("  REPEATS BELOW THE REFERENCE" if r["stats"]["repeats"] < old["stats"]["repeats"] else ""))
        print(line + "  " + ",".join(f"{k}={v}" for k, v in r["params"].items() if k not in ("scale", "fanouts")))
PY
tar czf "$OUT/results.tgz" -C "$OUT" results && rm -rf "$OUT/results"
