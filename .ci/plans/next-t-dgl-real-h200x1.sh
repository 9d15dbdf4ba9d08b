#!/usr/bin/env bash
# 1 x H200, carry .wheels/dgl (dgl-2.1.0-cp312-cp312-manylinux1_x86_64.whl, torchdata-0.7.1-py3-none-any.whl;
# DGL's other imports, networkx, requests, tqdm, psutil and scipy, are in the image). Issue 28: the DGL rows of
# WholeGraph Table V, XGNN Table 4 and MG-GCN Table 3 with real DGL 2.1 imported through harness/dgl_compat.py.
# DGL's PyPI wheel is a CPU build: its NeighborSampler and DataLoader sample on the host's cores with 8 worker
# processes and the blocks train on PyG's layers on the GPU (Table V says so), beside ours in the same run; XGNN
# Table 4 runs real DGL beside the re-implemented DGL policy (dgl_gpu); MG-GCN's DGL GraphConv cannot run on the
# GPU with a CPU build (its cuda rows are skipped with that reason), so its DGL column is also measured on the
# host CPU (--device cpu); the sampling experiment's loader target times DGL's DataLoader by production rate
# (windows of one wave of its 8 workers). About 9.5 minutes in one call; each step has its own limit.
cd "$(dirname "$0")/../.."
.ci/device.sh --limit 230 -- wholegraph.table5 --device cuda --impl dgl_host,wholegraph \
  --param datasets=ogbn-products --param models=gcn,sage,gat --param epochs=1 --param eval_nodes=2048 \
  --param host_max_batches=16 --timeout 220 --label h200x1_table5-dgl
PYTHONPATH="$PWD:/tmp/site" python3 -m harness env 2>&1 | grep -E "^(torch|dgl:)|dgl_host|fullbatch.dgl"
.ci/device.sh --limit 170 -- xgnn.table4 --device cuda --param systems=dgl,dgl_gpu,xgnn \
  --param datasets=twitter-2010 --param models=gcn,sage --launch-per-point --timeout 160 --label h200x1_xgnn-table4-dgl
.ci/device.sh --limit 80 -- wholegraph.sampling --device cuda --impl dgl,path_doubling --param kinds=loader \
  --param datasets=products --timeout 75 --label h200x1_sampling-dgl-loader
.ci/device.sh --limit 40 -- mggcn.table3 --device cuda --impl mggcn,dgl --param datasets=reddit,products \
  --param models=paper --timeout 35 --label h200x1_mggcn-table3-dgl
.ci/device.sh --limit 50 --pack -- mggcn.table3 --device cpu --impl dgl,single_gpu --param datasets=reddit,products \
  --param models=paper --timeout 45 --label h200x1-host-cpu_mggcn-table3-dgl
