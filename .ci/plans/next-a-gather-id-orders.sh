#!/usr/bin/env bash
# 4 x H200 (no carry). Issue 4: 0089 (2 GPUs) showed p2p_shared reading every owner's rows in sequence
# (id_orders=owner_streams) no faster than random ids (631 vs 630 GB/s at 512 B): the 84-86% of the
# n/(n-1) x copy-engine ceiling is what SM reads over NVLink reach. This repeats it on 4 GPUs at all
# three row sizes, now with the legacy-IPC variant too (random 512 B: 20-36 GB/s, 18x below the VMM
# mapping of the same kind of allocation: sequential ids say whether its remote TLB is the cause).
cd "$(dirname "$0")/../.."
D=.ci/device.sh
$D --limit 200 --pack -- wholegraph.gather --device cuda --impl p2p_shared,nccl_alltoallv,ceiling_peer_copy \
  --param id_orders=owner_streams --label h200x4_wholegraph.gather-id-orders
