"""Interface `sampling`: neighbor sampling on a CSR graph (WholeGraph III-C, XGNN section 5).

Implementations register with ``register_impl("sampling", name, ...)`` and are created
per rank by their factory from a CSR (``indptr`` int64 of length ``num_nodes + 1``,
``indices`` of neighbor ids). A sampler draws at most ``fanout`` neighbors per seed
without replacement; a seed with degree <= fanout gets every neighbor. Each module
documents its output convention (``wholegraph_lib``: the library's CSR-style
``(sample_offsets, sampled_ids)``).
"""
