#!/usr/bin/env bash
# 4 GPUs (nvidia-h100-x4 or nvidia-h200-x4, the machine of next-w-gpu-gate-trial-x4.sh, in a call of its
# own; move results/ and reports/ out of the tree first). The gpu-marked tests with their launches
# shared (issue 37 item 6: next-v's run took 9-12 s per gather case and 20-23 s per MG-GCN overlap
# case, each a launch of its own, and had not finished 24 of 118 tests in 250 s). Expected: every test
# passes or skips for a missing package, in under 8 minutes; the timed log shows one launch's cost on
# the first test of each shared group and about 0 s on the others. A timestamp on every line.
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/harness-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH="$PWD"
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader
start=$(date +%s)
timeout --signal=INT 530 python3 -m pytest -m gpu tests -v -p no:cacheprovider --durations=50 2>&1 \
  | while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N | cut -c1-14)" "$l"; done > "$OUT/gpu-tests-timed.log"
echo "pytest -m gpu: $(( $(date +%s) - start )) s" | tee -a "$OUT/gpu-tests-timed.log"
grep -cE ' PASSED| FAILED| SKIPPED| ERROR' "$OUT/gpu-tests-timed.log"; grep -E 'FAILED|ERROR' "$OUT/gpu-tests-timed.log" | head
tail -60 "$OUT/gpu-tests-timed.log" | cut -c1-170
