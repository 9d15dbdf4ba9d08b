"""Interface `gather`: ``gather(ids) -> rows`` in the order of ``ids`` from a table spread over ranks.

Every implementation is created per rank by its factory
``make(rank: RankContext, spec: TableSpec, **options) -> Gatherer`` and fills its own
storage with the closed-form content of ``impls.core.layout.closed_form_rows``, so a
gather can be checked locally. A ``Gatherer`` has:

- ``gather(ids, check=True) -> Tensor`` (ids int64 on the rank's device; rows
  ``[len(ids), row_elems]`` on the rank's device, even for host-resident stores);
- ``describe() -> str`` (where the rows live, which addressing mode);
- ``close()`` (collective: every rank calls it).

``gather`` is collective for implementations that communicate (``nccl_alltoallv``,
``wholegraph_lib`` distributed, ``p2p_push``): every rank calls it the same number of times.
``p2p_push`` returns a view of its output buffer (peers write into it): valid until its next call.
"""
