"""Interface `gather`: ``gather(ids) -> rows`` in the order of ``ids`` from a table spread over ranks.

Every implementation is created per rank by its factory (``GatherFactory``:
``make(rank: RankContext, spec: TableSpec, **options) -> Gatherer``) and fills its own storage
with the closed-form content of ``impls.core.layout.closed_form_rows``, so a gather can be checked
locally. A ``Gatherer`` has:

- ``gather(ids, check=True) -> Tensor`` (ids int64 on the rank's device; rows
  ``[len(ids), row_elems]`` on the rank's device, even for host-resident stores);
- ``describe() -> str`` (where the rows live, which addressing mode);
- ``close()`` (collective: every rank calls it).

``gather`` is collective for implementations that communicate (``nccl_alltoallv``,
``wholegraph_lib`` distributed, ``p2p_push``): every rank calls it the same number of times.
``p2p_push`` returns a view of its output buffer (peers write into it): valid until its next call.

The link ceilings (ceiling.py) are registered here too so that the gather experiments measure them
beside the gathers; they are ``Ceiling`` objects, not gathers (trait ``ceiling``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from harness.registry import register_interface

if TYPE_CHECKING:
    import torch

    from harness.launcher import RankContext
    from harness.timing import RepeatBudget, Stats
    from impls.core.layout import TableSpec


@runtime_checkable
class Gatherer(Protocol):
    def gather(self, ids: "torch.Tensor", check: bool = True) -> "torch.Tensor": ...

    def describe(self) -> str: ...

    def close(self) -> None: ...


class GatherFactory(Protocol):
    def __call__(self, rank: "RankContext", spec: "TableSpec", **options) -> Gatherer: ...


@dataclass
class Reading:
    """What a ceiling measured on this rank: ``seconds`` per call (None on a rank that does not
    time), the bytes one call moves (its bandwidth is bytes / seconds, in GB/s), the metric the rows
    store it as, whether BusBW = AlgoBW x (n-1)/n is stored too, and what else it observed."""

    metric: str
    seconds: "Stats | None"
    nbytes: int
    busbw: bool = False
    extra: dict = field(default_factory=dict)


@runtime_checkable
class Ceiling(Protocol):
    """A reference bandwidth measured in the same run as the gathers. ``size_param`` names the
    point parameter holding the bytes a call moves and ``default_bytes(quick)`` its default (a
    run on CPU or ``--quick`` moves fewer)."""

    size_param: str

    def default_bytes(self, quick: bool) -> int: ...

    def measure(self, rank: "RankContext", params: dict, budget: "RepeatBudget",
                link_counters: bool = False) -> Reading: ...


TRAITS = {
    "ceiling": "a reference bandwidth measured beside the gathers, not a gather (a Ceiling)",
    "one_way_copy": "the one-way peer copy: the link's ceiling the gathers' '% ceiling' is against",
    "peer_read": "one kernel reads each row where it lies in its owner's memory (WholeGraph's shared "
                 "store, Fig. 8's subject)",
    "collective": "rows move through collectives (NCCL on GPUs, gloo on CPU): Fig. 10's baseline",
    "paper": "the paper's own design as this harness implements it: the series a paper claim is about",
    "library": "the paper system's own package (real WholeGraph)",
    "host": "rows in host memory: slow, timed with fewer repeats, no link counters, no '% ceiling'",
    "tuned": "differs from another variant only in how memory is shared or how the kernel loads: in "
             "the every-implementation table, not in the paper's figures",
    "bulk_copy": "issues bulk-copy (TMA) instructions: measured after the others, so that a fault "
                 "costs no other point",
    "launch": "a kernel of ours whose geometry the option launch= sets (p2p_launch sweeps it)",
    "id_orders": "reads rows in place, so the order of the ids (owner_streams) changes what it "
                 "reaches: the id-order sweep times it",
    "capacity": "holds a call's rows in buffers of capacity= rows, which the caller sizes",
}

register_interface("gather", Gatherer, factory=GatherFactory, traits=TRAITS,
                   summary="gather(ids) -> rows of a table spread over the ranks")
