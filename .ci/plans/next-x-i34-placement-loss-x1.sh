#!/usr/bin/env bash
# 1 GPU (any kind: the work is the machine's CPU cores, sampling in numpy, and the GPU, training), nothing to
# carry; move results/ and reports/ out of the tree first. Issue 34 item 1: ICS'22's loss curves (Figs. 7,
# 8, 9, 12) at the paper's settings (30 epochs, Our, Our+LAS and PaGraph where the paper trains it) with
# the fixed method: the ratio estimator, exact inference for the test score, the chance loss recorded.
# One `harness run` per curve (--param methods, --param topologies), all at once on the machine's cores,
# so the 22 curves take as long as the slowest (reddit's, about 4 minutes); the stand-ins are prepared
# first, one at a time, so that no two runs write one cache. About 8 minutes.
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/harness-out}; mkdir -p "$OUT/results" "$OUT/logs"
.ci/device.sh                     # shows the GPU; runs nothing
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" OMP_NUM_THREADS=1
for spec in reddit:0.1 yelp:0.05 products:0.02; do
  timeout 60 python3 -m harness data prepare "${spec%%:*}" --scale "${spec##*:}" > "$OUT/logs/prepare-${spec%%:*}.log" 2>&1 \
    || echo "prepare ${spec} failed: $(tail -1 "$OUT/logs/prepare-${spec%%:*}.log")"
done
# Fig. 12 trains on MAG240M's stand-in with the planted feature signal at norm 16 (experiments/placement/fig12.py)
timeout 60 python3 -c "from harness import datasets; datasets.prepare('mag240m', 0.002, feature_signal=16.0)" \
  > "$OUT/logs/prepare-mag240m.log" 2>&1 || echo "prepare mag240m failed: $(tail -1 "$OUT/logs/prepare-mag240m.log")"
pids=()
for fig in fig7 fig8 fig9 fig12; do
  methods="our our+las pg"; [ "$fig" = fig12 ] && methods="our our+las"      # no PaGraph curve on MAG240M
  for top in 2GPU '(2+2)GPU'; do
    for m in $methods; do
      tag="${fig}-${top//[()+]/}-${m//+/-}"
      timeout --signal=INT --kill-after=15 450 python3 -m harness run "placement.$fig" --device cuda \
        --param topologies="$top" --param methods="$m" --out "$OUT/results" --no-report \
        --label "x1_placement.$tag" > "$OUT/logs/$tag.log" 2>&1 &
      pids+=($!)
    done
  done
done
wait "${pids[@]}"
python3 - "$OUT/results" <<'PY'
import json, pathlib, sys
for run in sorted(pathlib.Path(sys.argv[1]).iterdir()):
    for line in (run / "rows.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["metric"] != "train_loss":
            continue
        if r["status"] != "ok":
            print(f"{run.name:50} {r['status']}: {(r.get('reason') or '')[:80]}")
            continue
        e = r["extra"]
        curve = e["loss_per_epoch"]
        print(f"{run.name:50} epochs {len(curve)} loss {curve[0]:.3f} -> {curve[-1]:.3f} = "
              f"{curve[-1] / e['chance_loss']:.2f} x chance ({e['chance_loss']:.3f}), steps/epoch {e['steps_per_epoch']}")
PY
grep -h "test_accuracy=" "$OUT"/logs/*.log | sed 's/.*placement\.\(fig[0-9]*\) \([a-z_]*\) .*topology=\([^ ]*\) .*las=\([A-Za-z]*\): .*test_accuracy=\([0-9.e-]*\).*(took \([0-9.]* [a-z]*\).*/\1 \2 \3 las=\4 acc \5 took \6/'
tar czf "$OUT/results.tgz" -C "$OUT" results && rm -rf "$OUT/results"
tar czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$OUT/logs"
