#!/usr/bin/env bash
# 2 x H200 (kind nvidia-h200-x2; move results/ and reports/ out of the tree for the 64 MiB limit).
# Issue 25 moved every CUDA launch onto impls/core (probes, gathers, samplers, append-uniques, the
# tiered stores' tier kernels, the placement loader) and made the runner the only source of ranks
# (ICS'22's measured loading now runs on the runner's ranks instead of launching its own; MG-GCN,
# XGNN Fig. 14 and the training experiments take their counts from harness/worlds.py). This plan
# runs every gpu-marked test, then quick runs of the experiments whose run path moved, on the
# hardware of the quick references. About 9 minutes.
#
# At home: python -m harness compare --reference results <each fetched run> (same hardware and
# quick flag as the references: a regression or a lost point is a defect of the refactor), and
# read the placement run's measured rows (Gather fused, on cuda, two ranks).
cd "$(dirname "$0")/../.."
.ci/device.sh --tests
.ci/device.sh --limit 240 -- wholegraph.table1 xgnn.fig6 wholegraph.gather wholegraph.unique --device cuda \
  --quick --timeout 230 --label issue25-core
.ci/device.sh --limit 120 -- placement.fig4 --device cuda --quick --param measured=2GPU --timeout 110 \
  --label issue25-placement-ranks
.ci/device.sh --limit 150 -- xgnn.fig14 mggcn.table3 --device cuda --quick --timeout 140 --label issue25-ranks \
  --pack
