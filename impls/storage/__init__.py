"""Interface `storage`: a row table spread over ranks (WholeGraph's WholeMemory, XGNN's GGMS).

Addressing modes (WholeGraph blog): ``continuous`` (one address space), ``chunked`` (a
pointer per rank, chunk picked from the global offset) and ``distributed`` (no mapping:
reached through communication). Rows are split contiguously: rank r owns
``[r * rows_per_rank, (r + 1) * rows_per_rank)`` (impls/core/layout.py, shards.py, host_table.py).
Continuous addressing on GPUs maps every rank's shard into one virtual range with the CUDA
driver's VMM API (vmm.py: cuMemCreate, fds over Unix sockets, cuMemMap), rows per rank padded
to whole allocation granules.

Tiered graph stores (topology + features over the GPUs and pinned host memory, per-tier byte
counters, memory accounting; registered as ``storage.ggms``, ``storage.dgl_cache``,
``storage.quiver``, built per rank by ``make(rank, graph, **options)``, collective):

- tiers.py: ``TierLayout`` (which hot-ordered rows live on which GPU, modulo partitions, copies;
  XGNN Fig. 5's forwarding ``locate`` / ``physical``), reorder.py: hotness reordering;
- tiered.py: ``TieredStore`` (``num_neighbors``, ``neighbors``, ``features``, ``sampler()``,
  ``hit_rates()``, ``memory()``), on symmetric memory + registered host memory (CUDA) or
  /dev/shm (CPU ranks);
- ggms.py (XGNN, placement solver), dgl_cache.py (DGL+C), quiver.py (Quiver);
- budget.py: per-GPU memory budgets, the largest ratios that fit, ``OutOfMemoryBudget``.
"""

# the storage API other interfaces use (the gathers read a ShardedTable or a HostTable; the
# pipelines build the tiered stores and size their workspace; MG-GCN's peer copies and the pushed
# gather keep buffers every rank maps: GpuBuffers on GPUs, SharedHostArray on CPU ranks)
from .budget import estimate_workspace  # noqa: E402,F401
from .dgl_cache import build_dgl_cache  # noqa: E402,F401
from .ggms import build_ggms  # noqa: E402,F401
from .host_table import HostTable  # noqa: E402,F401
from .quiver import build_quiver  # noqa: E402,F401
from .shards import ShardedTable  # noqa: E402,F401
from .tiered import GpuBuffers, SharedHostArray  # noqa: E402,F401
