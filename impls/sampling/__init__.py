"""Interface `sampling`: neighbor sampling on a CSR graph (WholeGraph III-C, XGNN section 5).

Implementations register with ``register_impl("sampling", name, ...)`` and are created
per rank by their factory from a CSR (``indptr`` int64 of length ``num_nodes + 1``,
``indices`` of neighbor ids). A sampler draws at most ``fanout`` neighbors per seed
without replacement; a seed with degree <= fanout gets every neighbor. Each module
documents its output convention (``wholegraph_lib``: the library's CSR-style
``(sample_offsets, sampled_ids)``).

Ours (samplers.py, unique.py, minibatch.py; kernels/*.cu on CUDA, numba on CPU; bit-identical):

- ``path_doubling`` (WholeGraph Alg. 1), ``reservoir`` (one thread per target), ``khop_batched``
  (XGNN KHop; ``variant="original"`` is the reservoir KHop it improves on) return
  ``(offsets int64 [n + 1], neighbors int64)``: a CSR over the seeds of global neighbor ids,
  ``min(degree, fanout)`` distinct CSR positions per seed, whole lists in CSR order when
  degree <= fanout. Options: ``store`` (local | split | sharded over the ranks' GPUs, csr.py),
  ``count_remote`` (requests to rows of other ranks, ``remote_stats()``), ``seed``.
- ``pinsage_walk`` (random_walk.py): PinSAGE's neighbours by random walks with restart, the top
  ``fanout`` visited nodes per target; ``weighted = True`` and ``sample_weighted`` also returns
  their visit counts (float32), which ``sample_blocks`` attaches to the blocks as edge weights.
- interface ``unique``: ``hash_append`` (WholeGraph Fig. 5), ``sort`` (torch.unique),
  ``wholegraph_lib``: ``append_unique(targets, neighbors) -> (unique_ids, local_neighbors,
  dup_count)`` with the targets first in their order.
- ``minibatch.sample_blocks(sampler, unique, seeds, fanouts)`` -> list of ``blocks.Block``.
- baselines.py: ``pyg`` (NeighborSampler, pyg-lib or torch-sparse), ``dgl``, and an adapter
  giving ``wholegraph_lib`` our convention. The experiments' measuring helpers live in
  experiments/kit/samplers.py.
"""

# the sampling API other interfaces use (the pipelines sample blocks and use the baselines' loaders;
# the tiered stores sample over their own CSR parts)
from .baselines import make_lib_adapter, pyg_backend  # noqa: E402,F401
from .minibatch import sample_blocks  # noqa: E402,F401
from .random_walk import RandomWalkSampler  # noqa: E402,F401
from .samplers import KHopBatchedSampler  # noqa: E402,F401
