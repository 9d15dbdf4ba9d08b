#!/usr/bin/env bash
# 4 x H200 (carry .wheels/pyg, .wheels/nvml and .wheels/metis). Issue 6: Table V's UK GAT PyG cell,
# cut by the time limit in 0084. Issue 7: the METIS policy measured on GPUs beside Our and RAND
# (0079-0081 skipped it: pymetis was not carried), Figs. 6 and 5 on the measurable topologies.
cd "$(dirname "$0")/../.."
D=.ci/device.sh
$D --limit 150 --pack -- wholegraph.table5 --device cuda --param datasets=uk-2007-05 --param models=gat \
  --impl pyg_host --param host_max_batches=2 --timeout 140 --label h200x4_wholegraph.table5-uk-gat-pyg
for f in fig6 fig5; do
  $D --limit 115 --pack -- placement.$f --device cuda --impl metis,clique_opt,random \
    --param 'topologies=2GPU,(2+2)GPU,4GPU' --param las_topologies=none --label h200x4_placement.$f-metis
done
