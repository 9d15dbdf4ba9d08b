#!/usr/bin/env bash
# 4 GPUs (nvidia-h100-x4 or nvidia-h200-x4, whichever is lent; move results/ and reports/ out of the
# tree first). Baselines for issues 33 (item 4) and 36 on main as it stands: MG-GCN products 3x256 on
# 1, 2 and 4 ranks beside single_gpu, its Fig. 8 stage timeline on 4 GPUs, the one-kernel gather at
# 512 B beside the peer-copy ceiling, then the gpu-marked tests with a timestamp on every result line
# (where the multi-GPU tests spend their time). About 8 minutes.
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/harness-out}; mkdir -p "$OUT"
.ci/device.sh --limit 150 -- mggcn.table3 --device cuda --param datasets=products --param models=3x256 \
  --impl mggcn,single_gpu --timeout 140 --label x4_mggcn.table3-products-baseline
.ci/device.sh --limit 90 -- mggcn.fig8 --device cuda --gpus 4 --param model=3x256 --timeout 80 \
  --label x4_mggcn.fig8-products-baseline
.ci/device.sh --limit 90 --pack -- wholegraph.gather --device cuda --param row_bytes=512 \
  --impl 'p2p*,ceiling*' --timeout 80 --label x4_gather-512-baseline
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH="$PWD"
timeout --signal=INT 250 python3 -m pytest -m gpu tests -v -p no:cacheprovider --durations=40 2>&1 \
  | while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N | cut -c1-14)" "$l"; done > "$OUT/gpu-tests-timed.log"
grep -cE ' PASSED| FAILED| SKIPPED| ERROR' "$OUT/gpu-tests-timed.log"; grep -E 'FAILED|ERROR' "$OUT/gpu-tests-timed.log" | head; tail -45 "$OUT/gpu-tests-timed.log" | cut -c1-160
