"""What every placement policy returns: per-GPU buffers and the ICS'22 dev_num/buf_pos lookup.

ICS'22 Sec. 3.2: "Each GPU has a dev_num array and a buf_pos array for locating the nodes:
dev_num[i] indicates which device we should read node-i from and buf_pos[i] is the index of
node-i in dev_num[i]'s buffer ... we use -1 as the CPU device number." The CPU buffer holds every
node at its own id, so a host read has buf_pos[i] = i. GPUs are numbered from 0 here (the paper
numbers them from 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from impls.core.topology import Topology

HOST = -1


@dataclass(frozen=True)
class Lookup:
    """Where one GPU reads every node from: ``dev_num`` (-1 = host) and ``buf_pos``."""

    gpu: int
    dev_num: np.ndarray   # int16, one entry per node
    buf_pos: np.ndarray   # int64, slot in dev_num's buffer (node id for the host)

    def sources(self, nodes: np.ndarray) -> np.ndarray:
        return self.dev_num[nodes]


@dataclass
class Placement:
    """Per-GPU node buffers (a node may sit on several GPUs) and how each GPU finds every node.

    ``buffers[g]`` lists the node ids stored on GPU g in buffer order: slot k holds
    ``buffers[g][k]``. ``peer_reads`` False means a GPU reads only its own buffer or the host
    (PaGraph). ``train_parts`` is set by partitioners that also split the training nodes (each
    GPU then trains on its own part only: local shuffling); None means global shuffling.
    ``lookup_fn`` lets a policy with its own access plan (XGNN's solver) build the lookup.
    """

    policy: str
    topology: Topology
    num_nodes: int
    buffers: list[np.ndarray]
    buffer_size: int
    peer_reads: bool = True
    train_parts: list[np.ndarray] | None = None
    meta: dict = field(default_factory=dict)
    lookup_fn: Callable[["Placement", int], Lookup] | None = None
    _slots: list[np.ndarray] | None = field(default=None, repr=False)
    _lookups: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        if len(self.buffers) != self.topology.num_gpus:
            raise ValueError(f"{self.policy}: {len(self.buffers)} buffers for {self.topology.num_gpus} GPUs")
        self.buffers = [np.ascontiguousarray(b, dtype=np.int64) for b in self.buffers]
        for g, buf in enumerate(self.buffers):
            if len(buf) > self.buffer_size:
                raise ValueError(f"{self.policy}: GPU {g} holds {len(buf)} nodes, buffer size is {self.buffer_size}")

    # --- structure -------------------------------------------------------------------
    @property
    def num_gpus(self) -> int:
        return self.topology.num_gpus

    def slots(self, gpu: int) -> np.ndarray:
        """Slot of every node in ``gpu``'s buffer, -1 where it is not stored there."""
        if self._slots is None:
            self._slots = []
            for g, buf in enumerate(self.buffers):
                slot = np.full(self.num_nodes, -1, dtype=np.int64)
                slot[buf] = np.arange(len(buf), dtype=np.int64)
                if np.count_nonzero(slot >= 0) != len(buf):
                    raise ValueError(f"{self.policy}: GPU {g} stores a node twice")
                self._slots.append(slot)
        return self._slots[gpu]

    def stored_mask(self, gpus: list[int] | None = None) -> np.ndarray:
        """Nodes stored on any of ``gpus`` (all GPUs by default)."""
        mask = np.zeros(self.num_nodes, dtype=bool)
        for g in (range(self.num_gpus) if gpus is None else gpus):
            mask[self.buffers[g]] = True
        return mask

    def reachable_gpus(self, gpu: int) -> list[int]:
        """GPUs whose buffers ``gpu`` reads: itself, plus its NVLink neighbors if peer reads are on."""
        return self.topology.closed_neighborhood(gpu) if self.peer_reads else [gpu]

    def reachable_mask(self, gpu: int) -> np.ndarray:
        """ICS'22's B_gpu as seen from one GPU: every node it can read from some GPU buffer."""
        return self.stored_mask(self.reachable_gpus(gpu))

    def unique_stored(self) -> int:
        return int(np.count_nonzero(self.stored_mask()))

    def replicas(self) -> np.ndarray:
        """How many GPUs store each node."""
        counts = np.zeros(self.num_nodes, dtype=np.int32)
        for buf in self.buffers:
            counts[buf] += 1
        return counts

    def summary(self) -> dict:
        stored = self.unique_stored()
        used = sum(len(b) for b in self.buffers)
        return {"policy": self.policy, "topology": self.topology.name, "gpus": self.num_gpus,
                "buffer_size": self.buffer_size, "unique_on_gpus": stored,
                "cache_ratio": stored / max(1, self.num_nodes), "slots_used": used,
                "duplicated_slots": used - stored, "peer_reads": self.peer_reads, **self.meta}

    # --- ICS'22 lookup -----------------------------------------------------------------
    def lookup(self, gpu: int) -> Lookup:
        if gpu not in self._lookups:
            fn = self.lookup_fn or default_lookup
            self._lookups[gpu] = fn(self, gpu)
        return self._lookups[gpu]

    def split_for_gather(self, gpu: int, nodes: np.ndarray) -> "GatherSplit":
        """What ``gpu`` gathers for ``nodes``, in the ids a sharded feature store understands.

        GPU buffers form one table of ``num_gpus * buffer_size`` rows split contiguously (GPU d
        owns rows d * buffer_size + slot, the RowPartition of ``impls.gather``), so local and
        peer reads are one gather over ``store_rows``; the rest are host rows (node ids).
        """
        lookup = self.lookup(gpu)
        nodes = np.asarray(nodes, dtype=np.int64)
        dev = lookup.dev_num[nodes].astype(np.int64)
        on_gpu = dev >= 0
        store_pos = np.flatnonzero(on_gpu)
        host_pos = np.flatnonzero(~on_gpu)
        store_rows = dev[on_gpu] * self.buffer_size + lookup.buf_pos[nodes[on_gpu]]
        return GatherSplit(store_rows, store_pos, nodes[host_pos], host_pos, dev[on_gpu])


@dataclass(frozen=True)
class GatherSplit:
    """Rows to read from the GPU store (``store_rows``) and from the host (``host_ids``), and
    where each lands in the mini-batch (``store_pos``, ``host_pos``); ``store_device`` names the
    GPU each store row lives on (== the gathering GPU for local reads)."""

    store_rows: np.ndarray
    store_pos: np.ndarray
    host_ids: np.ndarray
    host_pos: np.ndarray
    store_device: np.ndarray


def default_lookup(placement: Placement, gpu: int) -> Lookup:
    """Local copy first, else a neighbor that holds the node, else the host.

    Where several neighbors hold a node, the node id picks one of them (id modulo the number of
    holders), so duplicated nodes spread their remote reads evenly over the links instead of
    piling onto the first neighbor.
    """
    n_nodes = placement.num_nodes
    dev_num = np.full(n_nodes, HOST, dtype=np.int16)
    buf_pos = np.arange(n_nodes, dtype=np.int64)
    peers = placement.topology.neighbors(gpu) if placement.peer_reads else []
    if peers:
        held = np.stack([placement.slots(j) >= 0 for j in peers])          # (peers, nodes)
        count = held.sum(axis=0)
        nodes = np.flatnonzero(count)
        pick = nodes % count[nodes]                                          # which holder
        cum = np.cumsum(held[:, nodes], axis=0)
        chosen = np.argmax(cum > pick, axis=0)                               # pick-th holder
        peer_ids = np.asarray(peers)[chosen]
        dev_num[nodes] = peer_ids
        slots = np.stack([placement.slots(j)[nodes] for j in peers])
        buf_pos[nodes] = slots[chosen, np.arange(len(nodes))]
    local = placement.buffers[gpu]
    dev_num[local] = gpu
    buf_pos[local] = np.arange(len(local), dtype=np.int64)
    return Lookup(gpu, dev_num, buf_pos)
