#!/usr/bin/env bash
# 4 GPUs (nvidia-h100-x4 or nvidia-h200-x4; move results/ and reports/ out of the tree first). Issue 34
# item 2 and issue 36 item 3: XGNN Table 4's XGNN-vs-DGL+C cells under the timed-epoch rule
# (experiments/kit/training.py) at the new CUDA defaults: 1.2e8-edge stand-ins, 10 mini-batches per GPU
# per epoch (0.8k-2k seeds), 5 synchronized epochs for S/E/T and 5 free-running ones for E2E (50
# mini-batches per GPU), every timed epoch's seconds in the epoch_time row (timed_epoch_s) for the
# interval on each cell's ratio. GCN and GraphSAGE on TW, PA, UK, CF (DGL+C OOMs on CF and on UK with
# GCN, as in the paper). About 7 minutes.
#
# At home: the caption's "Epoch times:" sentence (epochs, mini-batches per GPU, spread), and per cell
# XGNN's E2E speedup over DGL+C with its interval from timed_epoch_s (the verdict rule of i34-verdict).
cd "$(dirname "$0")/../.."
.ci/device.sh --limit 420 --pack -- xgnn.table4 --device cuda --param systems=dgl_cache,xgnn \
  --param models=gcn,sage --timeout 410 --label x4_xgnn.table4-timed-epochs
