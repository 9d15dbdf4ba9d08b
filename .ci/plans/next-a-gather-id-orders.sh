#!/usr/bin/env bash
# 4 x H200 (no carry). Issue 4: is the 84-86% of the n/(n-1) x peer-copy ceiling a property of random
# 512 B reads over NVLink? The kernel geometry sweep (0082/0083) was flat (628-643 GB/s on 2 GPUs,
# 413-423 on 4), so this times the same kernel with ids that read every owner's rows in sequence
# (owner_streams: the kernel's streaming ceiling) beside uniformly random ids and NCCL, at 128 B,
# 512 B and 2 KB rows, on 2 and on 4 GPUs.
cd "$(dirname "$0")/../.."
D=.ci/device.sh
$D --limit 150 -- wholegraph.gather --device cuda --gpus 2 --impl p2p_shared,nccl_alltoallv,ceiling_peer_copy \
  --param id_orders=owner_streams --label h200x4-2gpu_wholegraph.gather-id-orders
$D --limit 150 --pack -- wholegraph.gather --device cuda --impl p2p_shared,nccl_alltoallv,ceiling_peer_copy \
  --param id_orders=owner_streams --label h200x4_wholegraph.gather-id-orders
