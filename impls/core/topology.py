"""GPU interconnect topologies: which GPUs read each other's memory directly, and how fast.

A :class:`Topology` is a symmetric matrix of NVLink bandwidths between GPUs (0 = no direct
link: a read has to go through the host), a PCIe bandwidth from each GPU to host memory and
the local memory bandwidth. Placement policies ask it for neighbors and cliques; the cost
models ask it for bandwidths.

Built-ins (bandwidths are per direction, GB/s, public figures; they only feed the models):

- ICS'22 (Sec. 5.1): 8 V100 on NVSwitch; '2GPU', '4GPU', '8GPU' all connected, '(2+2)GPU' and
  '(2*4)GPU' restricted to pairs ("by only allowing a GPU to read data from the GPU next to it").
- XGNN (Fig. 2b / Fig. 7): DGX-1 V100 hybrid cube-mesh, numbered as in XGNN Fig. 7, and its
  subsets '4Gf' (G0-G3), '4Gc' (G0, G1, G6, G7), '6G' (G0-G5), '8G' (all) of Sec. 6.6.
- DGX-A100 and the lent H200 machines: every pair connected (NVSwitch / NV18).
- 'PCIex<N>' (XGNN Fig. 16's 2xPCIe-V100): N GPUs without NVLink; every peer is read through the host.
- ``from_nvidia_smi``: the matrix printed by ``nvidia-smi topo -m`` on this machine.
"""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
from dataclasses import dataclass, field

import numpy as np

# NVLink 2.0 (V100): 25 GB/s per link and direction; NVLink 3.0 (A100): 25 GB/s per link, 12 links.
V100_LINK_GBPS = 25.0
A100_LINK_GBPS = 25.0
# docs/machines.md: the H200 machines show NV18 = 18 links x 26.56 GB/s between every pair.
H200_LINK_GBPS = 26.56
# Effective host-to-GPU bandwidths (pinned, large transfers); the raw x16 rates are 15.75 (Gen3),
# 31.5 (Gen4) and 63 (Gen5) GB/s. Gen5 zero-copy reads reach about 30-35 GB/s (docs/machines.md).
PCIE3_GBPS = 12.0
PCIE4_GBPS = 24.0
PCIE5_GBPS = 32.0
HBM_GBPS = {"V100": 900.0, "A100": 1555.0, "H200": 4800.0}


@dataclass(frozen=True)
class Topology:
    """GPUs, the NVLink bandwidth between each pair (0: none), PCIe to host, local memory.

    ``labels`` name the physical GPUs (e.g. ``G6``) when the topology is a subset of a machine.
    """

    name: str
    link_gbps: np.ndarray                      # (n, n), symmetric, zero diagonal
    pcie_gbps: float = PCIE3_GBPS
    local_gbps: float = HBM_GBPS["V100"]
    labels: tuple[str, ...] = ()
    description: str = ""
    clique_groups: tuple[tuple[int, ...], ...] | None = field(default=None)  # forced clique split

    def __post_init__(self):
        links = np.asarray(self.link_gbps, dtype=np.float64)
        if links.ndim != 2 or links.shape[0] != links.shape[1]:
            raise ValueError("link_gbps must be a square matrix")
        if not np.allclose(links, links.T):
            raise ValueError(f"topology {self.name}: link bandwidths must be symmetric")
        links = links.copy()
        np.fill_diagonal(links, 0.0)
        links.setflags(write=False)
        object.__setattr__(self, "link_gbps", links)
        if not self.labels:
            object.__setattr__(self, "labels", tuple(f"G{i}" for i in range(links.shape[0])))

    # --- structure -------------------------------------------------------------------
    @property
    def num_gpus(self) -> int:
        return int(self.link_gbps.shape[0])

    def connected(self, i: int, j: int) -> bool:
        return i == j or self.link_gbps[i, j] > 0

    def neighbors(self, gpu: int) -> list[int]:
        """GPUs that ``gpu`` reads directly over NVLink, fastest link first (then by index)."""
        row = self.link_gbps[gpu]
        peers = [j for j in range(self.num_gpus) if j != gpu and row[j] > 0]
        return sorted(peers, key=lambda j: (-row[j], j))

    def closed_neighborhood(self, gpu: int) -> list[int]:
        """The GPU itself first, then its NVLink neighbors."""
        return [gpu] + self.neighbors(gpu)

    def bandwidth(self, src: int, dst: int) -> float:
        """GB/s for ``dst`` reading memory of ``src``; -1 names the host."""
        if src == -1:
            return self.pcie_gbps
        if src == dst:
            return self.local_gbps
        return float(self.link_gbps[src, dst])

    def is_fully_connected(self) -> bool:
        n = self.num_gpus
        return all(self.link_gbps[i, j] > 0 for i in range(n) for j in range(n) if i != j)

    def cliques(self) -> list[list[int]]:
        """Split the GPUs into equal-size fully connected groups, as large as possible.

        Quiver and CliqueOpt cache per clique. XGNN Sec. 6.6 splits 4Gc and 6G into cliques of
        two and 8G into two cliques of four: the largest size k that divides the GPUs into
        cliques of k (an exact search; n <= 16 GPUs is tiny).
        """
        if self.clique_groups is not None:
            return [list(g) for g in self.clique_groups]
        n = self.num_gpus
        for k in range(n, 0, -1):
            if n % k:
                continue
            split = self._split_into_cliques(tuple(range(n)), k)
            if split is not None:
                return split
        return [[i] for i in range(n)]

    def _split_into_cliques(self, remaining: tuple[int, ...], k: int) -> list[list[int]] | None:
        if not remaining:
            return []
        first, rest = remaining[0], remaining[1:]
        for others in itertools.combinations(rest, k - 1):
            group = (first,) + others
            if all(self.connected(a, b) for a, b in itertools.combinations(group, 2)):
                left = tuple(x for x in rest if x not in others)
                tail = self._split_into_cliques(left, k)
                if tail is not None:
                    return [list(group)] + tail
        return None

    # --- derived topologies ----------------------------------------------------------
    def subset(self, gpus: list[int], name: str, description: str = "") -> "Topology":
        """The topology among ``gpus`` only (XGNN's 4Gf/4Gc/6G are subsets of Fig. 7)."""
        idx = np.asarray(gpus)
        return Topology(name, self.link_gbps[np.ix_(idx, idx)], self.pcie_gbps, self.local_gbps,
                        tuple(self.labels[i] for i in gpus), description or self.description)

    def restricted_to_groups(self, groups: list[list[int]], name: str, description: str = "") -> "Topology":
        """Keep only links inside each group (ICS'22's '(2+2)GPU' on an NVSwitch machine)."""
        links = np.zeros_like(self.link_gbps)
        for group in groups:
            for a in group:
                for b in group:
                    if a != b:
                        links[a, b] = self.link_gbps[a, b]
        return Topology(name, links, self.pcie_gbps, self.local_gbps, self.labels,
                        description or self.description, tuple(tuple(g) for g in groups))

    def matrix_text(self) -> str:
        """An ``nvidia-smi topo -m``-like matrix (NV<links> where the link is a whole multiple)."""
        lines = ["      " + " ".join(f"{lab:>6}" for lab in self.labels)]
        for i, lab in enumerate(self.labels):
            cells = []
            for j in range(self.num_gpus):
                if i == j:
                    cells.append("X")
                elif self.link_gbps[i, j] > 0:
                    cells.append(f"{self.link_gbps[i, j]:g}")
                else:
                    cells.append("host")
            lines.append(f"{lab:>6}" + " ".join(f"{c:>6}" for c in cells))
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"name": self.name, "labels": list(self.labels), "link_gbps": self.link_gbps.tolist(),
                "pcie_gbps": self.pcie_gbps, "local_gbps": self.local_gbps}


# --- built-ins --------------------------------------------------------------------------

def all_to_all(n: int, link_gbps: float, name: str, *, pcie_gbps: float, local_gbps: float,
               description: str = "") -> Topology:
    links = np.full((n, n), float(link_gbps))
    return Topology(name, links, pcie_gbps, local_gbps, description=description)


def dgx1_v100() -> Topology:
    """DGX-1 (V100) hybrid cube-mesh, numbered as in XGNN Fig. 7.

    XGNN states the adjacency: two fully connected quads {G0..G3} and {G4..G7} ("4Gf" uses G0-G3),
    G0 cannot reach G4, G5, G7, G4 reaches G2, G5, G6, G7 (W4's partitions live there), and
    G0, G1, G6, G7 form a cycle ("4Gc"); hence the cross links G0-G6, G1-G7, G2-G4, G3-G5.
    XGNN does not print per-link widths; we take DGX-1V's pattern (6 NVLink 2.0 bricks per GPU:
    the cross link and one quad link doubled, NV2 = 50 GB/s; the two other quad links NV1 =
    25 GB/s) renumbered onto that adjacency.
    """
    nv1, nv2 = V100_LINK_GBPS, 2 * V100_LINK_GBPS
    links = np.zeros((8, 8))
    single = [(0, 1), (0, 2), (1, 3), (2, 3), (4, 5), (4, 6), (5, 7), (6, 7)]
    double = [(0, 3), (1, 2), (4, 7), (5, 6), (0, 6), (1, 7), (2, 4), (3, 5)]
    for a, b in single:
        links[a, b] = links[b, a] = nv1
    for a, b in double:
        links[a, b] = links[b, a] = nv2
    return Topology("DGX-1 V100", links, PCIE3_GBPS, HBM_GBPS["V100"],
                    description="DGX-1: 8x V100 SXM2, hybrid cube-mesh NVLink 2.0 (XGNN Fig. 2b/7 numbering), PCIe 3.0")


def xgnn_topology(name: str) -> Topology:
    """XGNN Sec. 6.6: '4Gf' = G0-G3, '4Gc' = G0, G1, G6, G7, '6G' = G0-G5, '8G' = all of Fig. 7."""
    full = dgx1_v100()
    subsets = {"4Gf": [0, 1, 2, 3], "4Gc": [0, 1, 6, 7], "6G": [0, 1, 2, 3, 4, 5],
               "8G": list(range(8))}
    if name not in subsets:
        raise KeyError(f"unknown XGNN topology '{name}' (known: {', '.join(subsets)})")
    return full.subset(subsets[name], name, f"XGNN {name}: " + full.description)


XGNN_TOPOLOGIES = ("4Gf", "4Gc", "6G", "8G")

# ICS'22 Sec. 5.1: 8 V100 (32 GB) on NVSwitch; a V100 has 6 NVLink 2.0 bricks = 150 GB/s.
ICS22_NVSWITCH_GBPS = 6 * V100_LINK_GBPS
ICS22_TOPOLOGIES = ("2GPU", "(2+2)GPU", "4GPU", "(2*4)GPU", "8GPU")


def ics22_topology(name: str) -> Topology:
    """The five GPU configurations of ICS'22 Sec. 5.1 on its 8x V100 NVSwitch workstation."""
    desc = "ICS'22 workstation: 8x V100 32 GB on NVSwitch, PCIe 3.0"

    def switch(n):
        return all_to_all(n, ICS22_NVSWITCH_GBPS, f"{n}GPU", pcie_gbps=PCIE3_GBPS,
                          local_gbps=HBM_GBPS["V100"], description=desc)

    if name in ("2GPU", "4GPU", "8GPU"):
        return switch(int(name[0]))
    if name == "(2+2)GPU":
        return switch(4).restricted_to_groups([[0, 1], [2, 3]], name, desc + ", reads only within pairs")
    if name == "(2*4)GPU":
        return switch(8).restricted_to_groups([[0, 1], [2, 3], [4, 5], [6, 7]], name,
                                              desc + ", reads only within pairs")
    raise KeyError(f"unknown ICS'22 topology '{name}' (known: {', '.join(ICS22_TOPOLOGIES)})")


def dgx_a100(n: int = 8) -> Topology:
    return all_to_all(n, 12 * A100_LINK_GBPS, f"DGX-A100 {n}GPU", pcie_gbps=PCIE4_GBPS,
                      local_gbps=HBM_GBPS["A100"], description="DGX-A100: A100 SXM4 on NVSwitch, PCIe 4.0")


def h200(n: int = 4) -> Topology:
    """The lent H200 machines (docs/machines.md): every pair NV18, PCIe Gen5."""
    return all_to_all(n, 18 * H200_LINK_GBPS, f"H200 {n}GPU", pcie_gbps=PCIE5_GBPS,
                      local_gbps=HBM_GBPS["H200"], description="H200, every pair NV18, PCIe Gen5")


def pcie_only(n: int, pcie_gbps: float = PCIE3_GBPS) -> Topology:
    """``n`` GPUs with no NVLink (XGNN Fig. 16's 2xPCIe-V100 platform, PCIe 3.0): placement policies
    see no neighbour, so every GPU keeps its own copy of what it caches."""
    return Topology(f"PCIex{n}", np.zeros((n, n)), pcie_gbps, HBM_GBPS["V100"],
                    description=f"{n} GPUs on PCIe only, no NVLink")


def pairs(n_pairs: int, link_gbps: float = ICS22_NVSWITCH_GBPS) -> Topology:
    """GPUs connected in pairs only (NVLink bridges, ICS'22 Fig. 3a)."""
    n = 2 * n_pairs
    links = np.zeros((n, n))
    for k in range(n_pairs):
        links[2 * k, 2 * k + 1] = links[2 * k + 1, 2 * k] = link_gbps
    return Topology(f"({'+'.join(['2'] * n_pairs)})GPU", links, PCIE3_GBPS, HBM_GBPS["V100"],
                    description="GPU pairs over NVLink bridges")


# --- read from the machine ----------------------------------------------------------------

def from_nvidia_smi(text: str, *, per_link_gbps: float = H200_LINK_GBPS, pcie_gbps: float = PCIE5_GBPS,
                    local_gbps: float = HBM_GBPS["H200"], name: str = "this machine") -> Topology | None:
    """A topology from ``nvidia-smi topo -m`` text: ``NV<k>`` cells are k links of ``per_link_gbps``.

    Other cells (PIX, PXB, PHB, NODE, SYS) mean no NVLink: such peers are read through the host.
    Returns None when the text holds no GPU matrix.
    """
    from harness.envinfo import parse_topology

    parsed = parse_topology(text)
    if not parsed:
        return None
    n = len(parsed["matrix"])
    links = np.zeros((n, n))
    for i, row in enumerate(parsed["matrix"]):
        for j, cell in enumerate(row[:n]):
            match = re.fullmatch(r"NV(\d+)", cell)
            if i != j and match:
                links[i, j] = int(match.group(1)) * per_link_gbps
    links = np.maximum(links, links.T)  # a one-sided reading would break symmetry
    return Topology(name, links, pcie_gbps, local_gbps, tuple(parsed["gpus"]),
                    description=f"read from nvidia-smi topo -m ({per_link_gbps:g} GB/s per NVLink)")


def detect(**kwargs) -> Topology | None:
    """This machine's topology via ``nvidia-smi topo -m``; None without nvidia-smi or GPUs."""
    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return from_nvidia_smi(out.stdout, **kwargs) if out.returncode == 0 else None


def by_name(name: str) -> Topology:
    """Any built-in by name: ICS'22's, XGNN's, 'DGX-1', 'DGX-A100', 'H200x2', 'H200x4', 'PCIex2',
    'machine'."""
    if name in ICS22_TOPOLOGIES:
        return ics22_topology(name)
    if name in XGNN_TOPOLOGIES:
        return xgnn_topology(name)
    if name in ("DGX-1", "dgx1"):
        return dgx1_v100()
    if name in ("DGX-A100", "dgx-a100"):
        return dgx_a100(8)
    match = re.fullmatch(r"H200x(\d+)", name)
    if match:
        return h200(int(match.group(1)))
    match = re.fullmatch(r"PCIex(\d+)", name)
    if match:
        return pcie_only(int(match.group(1)))
    if name == "machine":
        topo = detect()
        if topo is None:
            raise KeyError("no GPU topology on this machine (nvidia-smi topo -m unavailable)")
        return topo
    raise KeyError(f"unknown topology '{name}'")
