#!/usr/bin/env bash
# 4 x H200, first call (carry .wheels/pyg): GPU tests on 4 GPUs and MG-GCN (issue 9).
# Each step has its own limit so one slow step cannot take the others' time; the last
# step packs every run directory into results.tgz.
cd "$(dirname "$0")/../.."
D=.ci/device.sh
C="--device cuda"
timeout 170 $D --tests --pytest --timeout=90
$D --limit 160 -- mggcn.table3 $C --param datasets=products,reddit --label h200x4_mggcn.table3
$D --limit 70 -- mggcn.fig8 mggcn.memory $C --param dataset=products --param datasets=products,reddit --param model=3x256 --label h200x4_mggcn.fig8-memory
$D --limit 60 -- mggcn.fig7 $C --param datasets=products,reddit --label h200x4_mggcn.fig7
$D --limit 50 -- mggcn.fig5 $C --param datasets=products,reddit,arxiv --label h200x4_mggcn.fig5
$D --limit 60 --pack -- mggcn.fig9 $C --param factors=1,4,16,64 --label h200x4_mggcn.fig9
