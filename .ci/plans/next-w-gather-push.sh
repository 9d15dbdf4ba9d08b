#!/usr/bin/env bash
# 2 or 4 GPUs (N=2: nvidia-h100-x2 / nvidia-h200-x2, or 2 GPUs of a 4-GPU machine; N=4: nvidia-h100-x4 /
# nvidia-h200-x4). Carry .wheels/wholegraph (about 56 MiB: move results/ and reports/ out of the tree
# first). Issue 36 item 2, the gather at 512 B rows pushed by the rows' owners:
# (a) the gpu gather tests: every cross-GPU gather (pull kernel with plain / L2::256B / bulk-copy loads,
#     push with NVLink stores / bulk-copy stores, NCCL) exact on adversarial ids in every dtype, the
#     copy-engine ceiling's copies checked, on N GPUs;
# (b, c) one wholegraph.gather run at 512 B with the link counters on: every variant beside real
#     WholeGraph, ceiling_peer_copy and the copy engines all-to-all both ways (ceiling_copy_all), each
#     GPU point then repeated half a second with NVML's NVLink payload and raw byte counters read
#     around it (after its timing, which they do not touch);
# then the same run again without counters and with four kernel geometries of the pull and push
# kernels (the same-run ratios a second time; which geometry the push wants), and a summary: every
# variant's GB/s, share of the ceiling, ratio to real WholeGraph's fastest mapped mode in the same run,
# raw link bytes per payload byte. Set N=2 or N=4. About 5 minutes; the limits add up to 510 s.
cd "$(dirname "$0")/../.."
# N=4 (or 2) as above; EXTRA_N=2 adds the link-counter run on the first 2 GPUs of a 4-GPU machine in the
# same call; GEOMETRY=0 leaves out the geometry sweep (a call that must fit both GPU counts).
N=${N:?set N=2 or N=4}
OUT=${OUT:-/tmp/harness-out}; mkdir -p "$OUT"
ALL=${CUDA_VISIBLE_DEVICES:-$(seq -s, 0 $((N - 1)))}
export CUDA_VISIBLE_DEVICES=$ALL   # the tests use every visible GPU
timeout --signal=INT --kill-after=15 ${TESTS_LIMIT:-240} .ci/device.sh --tests --pytest tests/gpu/test_gather_gpu.py \
  --pytest -k --pytest "adversarial or copy_engine or single_rank or releases"
for n in "$N" ${EXTRA_N:-}; do
  CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((n - 1))) .ci/device.sh --limit 130 -- wholegraph.gather --device cuda \
    --gpus "$n" --param row_bytes=512 --param link_counters=on \
    --impl 'p2p*,wholegraph_lib,nccl_alltoallv,ceiling*' --timeout 120 --label x${n}_gather-push-links
done
if [ "${GEOMETRY:-1}" = 1 ]; then
  .ci/device.sh --limit 140 -- wholegraph.gather --device cuda --gpus "$N" --param row_bytes=512 \
    --param p2p_launch=4x256u4,16x256u4,8x256u8,8x512u4 --impl 'p2p*,wholegraph_lib,ceiling_peer_copy' \
    --timeout 130 --label x${N}_gather-push-geometry
fi
python3 - "$OUT/results" <<'PY'
import json, pathlib, sys
print("--- gather at 512 B: GB/s per rank, % of n/(n-1) x peer copy, x real WholeGraph's fastest mapped mode")
for run in sorted(pathlib.Path(sys.argv[1]).iterdir()):
    rows = [json.loads(l) for l in (run / "rows.jsonl").read_text().splitlines() if l.strip()]
    for r in rows:
        if r["status"] != "ok":
            print(f"!!! {run.name} {r['impl']} {r['params']}: {r['status']}: {str(r.get('reason'))[:160]}")
    ok = [r for r in rows if r["status"] == "ok"]
    world = max((r["world_size"] for r in ok), default=1)
    peer = next((r["value"] for r in ok if r["metric"] == "peer_copy_bw"), None)
    ceiling = peer * world / (world - 1) if peer and world > 1 else None
    links = {(r["impl"], json.dumps(r["params"], sort_keys=True)): r["extra"]["nvlink"] for r in ok
             if isinstance(r.get("extra"), dict) and "nvlink" in r["extra"] and "reason" not in r["extra"]["nvlink"]}
    name = lambda r: r["impl"] + " " + ",".join(str(r["params"][k]) for k in ("mode", "backend", "load", "launch")
                                                if r["params"].get(k))
    wg = max((r["value"] for r in ok if r["impl"] == "wholegraph_lib" and r["metric"] == "algbw"
              and r["params"].get("mode") != "distributed"), default=None)
    print(f"{run.name}: {world} GPUs, peer copy {peer and round(peer)} GB/s, ceiling {ceiling and round(ceiling)} GB/s, "
          f"WholeGraph fastest mapped {wg and round(wg)} GB/s")
    for r in ok:
        if r["metric"] == "copy_all_bw":
            equiv = r["value"] * world / (world - 1)
            print(f"  copy engines all-to-all {r['params']['direction']:4}: {r['value']:.0f} GB/s in per rank -> "
                  f"gather at that rate {equiv:.0f} = {100 * equiv / ceiling:.0f}% of the ceiling")
    for r in sorted((r for r in ok if r["metric"] == "algbw" and "row_bytes" in r["params"]), key=lambda r: -r["value"]):
        link = links.get((r["impl"], json.dumps(r["params"], sort_keys=True)), {})
        raw = (f"  raw/payload rx {link['raw_rx_per_payload']:.3f} tx {link.get('raw_tx_per_payload', 0):.3f}, "
               f"rx payload {link.get('data_rx_GBps', 0):.0f} of raw {link.get('raw_rx_GBps', 0):.0f} GB/s"
               if "raw_rx_per_payload" in link else "")
        print(f"  {name(r):42} {r['value']:7.1f} GB/s {100 * r['value'] / ceiling if ceiling else 0:5.1f}%"
              + (f"  x{r['value'] / wg:.3f} WG" if wg else "") + raw)
    for r in ok:
        if r["impl"] == "ceiling_peer_copy" and isinstance(r.get("extra"), dict) and "raw_tx_per_payload" in r["extra"].get("nvlink", {}):
            n = r["extra"]["nvlink"]
            print(f"  peer copy raw/payload tx {n['raw_tx_per_payload']:.3f} (reverse direction raw {n['raw_rx_GBps']:.0f} GB/s)")
print("targets: fastest of ours >= 1.10x WholeGraph's fastest mapped mode and >= 90% of the ceiling, in the same run")
PY
tar czf "$OUT/results.tgz" -C "$OUT" results && rm -rf "$OUT/results"
