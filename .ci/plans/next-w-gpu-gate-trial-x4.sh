#!/usr/bin/env bash
# 4 GPUs (nvidia-h100-x4 or nvidia-h200-x4; move results/ and reports/ out of the tree first). A trial
# of the GPU regression gate (issue 38 item 2): `bench check --device cuda` six times, each with a
# copy of this tree as the base (the tree copied here has no .git, hence --base-tree) and another
# copy as the candidate, each check on a GPU of its own, four at a time:
#   slow-1.15x   the candidate's one-kernel gather (impls/core/row_gather.gather_into) launches its
#                kernel again over 15% of the ids: 15% more kernel work (must be flagged)
#   same-1..5    the candidate differs from the base by a comment only (must never be flagged)
# Expected: slow-1.15x fails with one REGRESSION, test_one_kernel_gather_gpu at about 1.15x, p =
# 0.004 (5 of 5 rounds slower); same-1..5 pass with 0 regressions. The GPU benchmarks assert their
# results while measured, so a failing one shows as "FAILED on this tree". $OUT/gpu-gate-trial.log
# holds every check's output and the verdict, $OUT/gpu-gate-trial-<name>.json every round's times
# (commit both under results/gates/). About 5 minutes on 4 GPUs (each check about 2 minutes).
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/harness-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
log="$OUT/gpu-gate-trial.log"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader | tee "$log"
work=$(mktemp -d)
copy() { mkdir -p "$1" && tar -cf - --exclude=./results --exclude=./reports --exclude=./.git . | tar -C "$1" -xf -; }
copy "$work/base"
trials=(slow-1.15x same-1 same-2 same-3 same-4 same-5)
for name in "${trials[@]}"; do
  copy "$work/$name"
  if [ "$name" = slow-1.15x ]; then
    cat >> "$work/$name/impls/core/row_gather.py" <<'PY'


# --- injected for a trial of the GPU gate: the one-kernel gather made 1.15x slower ---------------
_gather_into_as_committed = gather_into


def gather_into(out, table_ptrs, rows_per_part, ids, row_bytes, *args, **kwargs):
    _gather_into_as_committed(out, table_ptrs, rows_per_part, ids, row_bytes, *args, **kwargs)
    extra = int(ids.numel() * 0.15)         # the kernel again over 15% of the ids: 15% more work
    _gather_into_as_committed(out[:extra], table_ptrs, rows_per_part, ids[:extra], row_bytes, *args, **kwargs)
    return out
PY
  else
    printf '\n# a trial of the GPU gate: this copy differs from the base by this comment only\n' \
      >> "$work/$name/impls/core/row_gather.py"
  fi
done
gpus=$(nvidia-smi -L | wc -l)
run_trial() {  # name gpu
  (cd "$work/$1" && CUDA_VISIBLE_DEVICES=$2 PYTHONPATH="$work/$1" timeout --signal=INT --kill-after=20 240 \
    python3 -m harness bench check --device cuda --base-tree "$work/base" \
      --json "$OUT/gpu-gate-trial-$1.json") > "$work/$1.log" 2>&1
  echo $? > "$work/$1.rc"
}
i=0
for name in "${trials[@]}"; do
  run_trial "$name" $((i % gpus)) &
  i=$((i + 1))
  if [ $((i % gpus)) = 0 ]; then wait; fi
done
wait
verdict=ok
for name in "${trials[@]}"; do
  rc=$(cat "$work/$name.rc")
  want=0; [ "$name" = slow-1.15x ] && want=1
  flagged=no; [ "$rc" = 1 ] && flagged=yes
  [ "$rc" = "$want" ] || verdict=FAILED
  { echo "=== $name: exit $rc (flagged: $flagged; expected exit $want)"; cat "$work/$name.log"; } >> "$log"
  printf '%-12s exit %s  %s\n' "$name" "$rc" "$(grep -E 'regressions in' "$work/$name.log" | tail -1)"
done
echo "trial: $verdict (slow-1.15x must exit 1 with test_one_kernel_gather_gpu flagged, same-* exit 0)" | tee -a "$log"
for name in "${trials[@]}"; do grep -E '^ +(REGRESSION|ok|improved|FAILED|not on)' "$work/$name.log" | sed "s/^/$name /"; done
rm -rf "$work"
