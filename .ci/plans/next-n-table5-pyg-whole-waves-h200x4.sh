#!/usr/bin/env bash
# 4 x H200 (when lent), carry .wheels/pyg. Table V's 4-GPU PyG cells again, their epochs timed in whole
# loader waves (caps now round up to whole waves of the 8 workers; 0065-0085 capped at 2-12 batches
# and are upper bounds), beside ours in the same run. One call per dataset: DS=ogbn-products,
# ogbn-papers100M, friendster, uk-2007-05. About 5 minutes each.
cd "$(dirname "$0")/../.."
.ci/device.sh --limit 400 -- wholegraph.table5 --device cuda --impl pyg_host,wholegraph \
  --param datasets=${DS:?name DS} --param models=gcn,sage,gat --param epochs=1 --param eval_nodes=2048 \
  --param host_max_batches=16 --timeout 380 --label h200x4_table5-pyg-whole-waves-${DS}
