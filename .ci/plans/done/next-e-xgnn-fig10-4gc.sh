#!/usr/bin/env bash
# 4 x H200 (no carry). Issue 8: +PSA's gain needs an asymmetric topology (the paper's 1.3x on
# GSG+CF is the DGX-1's). On the all-connected H200s the clique policy and the solver place the
# same partitions; with --param topology=4Gc (XGNN's 4-GPU cycle of the DGX-1) they differ: cliques
# of 2 each cache their own copy, the solver replicates less. GraphSAGE on UK and CF, 5 synced epochs.
cd "$(dirname "$0")/../.."
.ci/device.sh --limit 330 --pack -- xgnn.fig10 --device cuda --param topology=4Gc --param combos=sage:UK,sage:CF \
  --param synced_epochs=5 --param epochs=7 --param max_edges=1.2e8 --label h200x4_xgnn.fig10-4gc-synced5
