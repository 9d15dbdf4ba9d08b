"""What every interface of ``impls/`` may import, and what imports no interface itself.

- ``cuda``: the one host-side path of CUDA kernels (CuPy/NVRTC compile, launch on torch's
  stream without context switches, the tests' CPU emulator); ``row_gather``: the one-kernel row
  gather over a pointer table (local, peer and mapped host parts) that the gathers, the tiered
  stores and the placement loader share;
- ``layout``: a table's rows and their owners (``TableSpec``, ``RowPartition``, the closed-form
  row content every store and gather is checked against); ``blocks``: the mini-batch ``Block``
  every sampler produces and every layer consumes, with its edge weights;
- ``topology``: GPUs, NVLink and PCIe of the papers' machines and of this one;
- ``nvml``: the NVML handle of a CUDA device; ``wholegraph``: pylibwholegraph's process-wide
  communicator, shared by the real WholeGraph gather and sampler.

An interface uses another only through that interface's package (``from impls.storage import
ShardedTable``), never its modules; tests/test_import_graph.py checks it.
"""
