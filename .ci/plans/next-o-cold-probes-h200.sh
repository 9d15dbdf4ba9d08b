#!/usr/bin/env bash
# 1 x H200. The memory probes with cold reads: every timed chain (and every random-read launch)
# reads lines no earlier launch of its point read, after an L2 flush on every GPU holding the
# memory. GPU probe tests (incl. the L2-resident chain vs the default 8 GB chain), then
# wholegraph.table1 (local, UM, host on one GPU, the paper's 8-128 GB) and xgnn.fig6 at the
# paper's sizes, and the chase kernel's SASS (the next line's address is computed while the load
# is in flight). About 6 minutes.
cd "$(dirname "$0")/../.."
set -o pipefail
.ci/device.sh --tests --pytest tests/gpu/test_probes_gpu.py
python3 - <<'PY' > "$OUT/chase-sass.txt" 2>&1
import subprocess, tempfile, pathlib
src = pathlib.Path("impls/probes/kernels/memprobe.cu")
with tempfile.TemporaryDirectory() as d:
    cubin = pathlib.Path(d) / "m.cubin"
    subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-o", str(cubin), str(src)], check=True)
    print(subprocess.run(["cuobjdump", "--dump-sass", "-fun", "pointer_chase", str(cubin)],
                         capture_output=True, text=True).stdout)
PY
grep -c "LDG" "$OUT/chase-sass.txt"
.ci/device.sh --limit 330 -- wholegraph.table1 --device cuda --gpus 1 --timeout 320 --label h200_table1-cold
.ci/device.sh --limit 200 --pack -- xgnn.fig6 --device cuda --gpus 1 --timeout 190 --label h200_fig6-cold
