#!/usr/bin/env bash
# 1 x H200 (16 CPU cores), carry .wheels/pyg. Issue 5: PyG's NeighborLoader timed by its production
# rate (windows of one wave of 8 batches; 0126's median gap of 35.6 ms was the spacing inside a wave: its
# mean gap was 1.57 s), with 8 workers and with none (batches built in the rank: one worker's time),
# beside both of our append-uniques in the same run, after the launch-path and dm_assign changes.
cd "$(dirname "$0")/../.."
timeout 120 .ci/device.sh --tests --pytest tests/gpu/test_sampling_gpu.py
.ci/device.sh --limit 240 -- wholegraph.sampling --device cuda --gpus 1 --param kinds=minibatch,loader \
  --param datasets=uniform:2000000:50 --param loader_datasets=uniform:2000000:50 --param fanouts=30-30-30 \
  --param batches=512 --impl path_doubling,pyg --param uniques=hash_append,dense_append \
  --param cpu_max_edges=1000000 --label h200x1_sampling-loader-rate-uniform
.ci/device.sh --limit 150 -- wholegraph.sampling --device cuda --gpus 1 --param kinds=loader \
  --param datasets=uniform:2000000:50 --param loader_workers=0 --repeats 2 --warmup 1 --impl pyg \
  --label h200x1_sampling-loader-no-workers-uniform
