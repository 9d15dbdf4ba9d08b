#!/usr/bin/env bash
# 2 x H200 (kind nvidia-h200-x2; move results/ and reports/ out of the tree for the 64 MiB limit).
# The GPU workflow's own steps on the hardware its references are kept for: the quick suite it
# compares pull requests with (label ci-quick: a new reference, the quick references 0010/0011
# were withdrawn), then the GPU tests, whose launches now spawn ranks that die with their parent
# and name a dead rank by its signal. About 8 minutes.
cd "$(dirname "$0")/../.."
.ci/device.sh --limit 420 -- wholegraph.table1 xgnn.fig6 wholegraph.gather --device cuda --quick \
  --timeout 400 --label ci-quick
.ci/device.sh --tests --pack
