"""The dataset registry: every graph the four papers train on, with its published statistics.

The numbers live in ``catalog.toml`` next to this module (data, not code); this module turns them
into frozen dataclasses and resolves names and aliases.  Lookup is case-insensitive and treats
``_`` and ``-`` alike, so ``UK_domain``, ``uk-domain`` and ``uk_domain`` are one name.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from ..errors import HarnessError

PAPERS = {
    "wholegraph": "WholeGraph (SC'22)",
    "xgnn": "XGNN (VLDB'24)",
    "mggcn": "MG-GCN",
    "placement": "Data placement (ICS'22)",
}

_EDGE_BASES = ("published", "symmetrized", "symmetrized_self_loops", "standin_stored")
_FEATURE_KINDS = ("real", "random", "none")
_FEATURE_DTYPES = ("float32", "float16", "bfloat16")


@dataclass(frozen=True)
class Split:
    """How the published split divides the nodes.

    ``kind == "counts"``: train/valid/test are node counts; ``"fractions"``: fractions of all nodes.
    """

    kind: str
    name: str
    train: float
    valid: float
    test: float
    note: str = ""

    def counts(self, num_nodes: int, published_nodes: int) -> tuple[int, int, int]:
        """Split sizes for a graph of ``num_nodes`` nodes, keeping the published proportions."""
        if self.kind == "fractions":
            ratios = (self.train, self.valid, self.test)
        else:
            ratios = tuple(x / published_nodes for x in (self.train, self.valid, self.test))
        sizes = [max(1, round(r * num_nodes)) for r in ratios]
        # Tiny graphs: keep the three sets disjoint and inside the graph.
        while sum(sizes) > num_nodes:
            largest = sizes.index(max(sizes))
            sizes[largest] -= 1
        return sizes[0], sizes[1], sizes[2]


@dataclass(frozen=True)
class StandinSettings:
    """Generator settings for a dataset's synthetic stand-in (see generators.py).

    These are choices, not published facts: ``stored_edges`` is what the papers stored (or the
    published count), ``max_degree`` the published maximum where known else a setting, ``gamma``
    the power-law exponent of the degree tail, ``body_beta`` how fast degrees fall off at the low
    end, ``homophily`` the fraction of edges drawn inside a node's community (its class), and
    ``feature_signal`` the class-centroid norm in units of the per-dimension noise.
    """

    symmetric: bool
    stored_edges: int
    max_degree: int
    gamma: float
    body_beta: float
    homophily: float
    feature_signal: float
    num_classes: int
    num_classes_note: str = ""


@dataclass(frozen=True)
class TableAppearance:
    """One row of a paper's dataset table, exactly as the paper prints it."""

    table_id: str
    paper: str
    label: str
    row_label: str
    cells: dict[str, str]
    edges_basis: str
    note: str = ""


@dataclass(frozen=True)
class Mention:
    paper: str
    where: str


@dataclass(frozen=True)
class DatasetSpec:
    """A dataset as published, plus where the papers use it and how to stand it in."""

    name: str
    title: str
    aliases: tuple[str, ...]
    source: str
    url: str
    nodes: int
    edges: int
    directed: bool
    feature_dim: int
    feature_dtype: str
    features: str
    num_classes: int | None
    task: str
    split: Split
    standin: StandinSettings
    edges_note: str = ""
    features_note: str = ""
    max_degree: int | None = None
    max_degree_note: str = ""
    mentions: tuple[Mention, ...] = ()
    tables: tuple[TableAppearance, ...] = ()
    real: dict[str, Any] = field(default_factory=dict)
    sweep: str | None = None

    @property
    def published_stored_edges(self) -> int:
        """Directed CSR entries of the published graph: both directions of an undirected edge."""
        return self.edges if self.directed else 2 * self.edges

    @property
    def published_mean_degree(self) -> float:
        return self.published_stored_edges / self.nodes

    @property
    def random_features(self) -> bool:
        """True where the papers (or the source) have no node features and generate random ones."""
        return self.features != "real"

    @property
    def papers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.paper for m in self.mentions))

    def appearance(self, table_id: str) -> TableAppearance | None:
        return next((t for t in self.tables if t.table_id == table_id), None)


@dataclass(frozen=True)
class TableSpec:
    table_id: str
    paper: str
    label: str
    caption: str
    location: str
    columns: tuple[dict[str, Any], ...]
    rows: tuple[dict[str, Any], ...]
    printed: tuple[str, ...] = ("round",)    # how the paper wrote its numbers: round and/or truncate

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c["name"] for c in self.columns)


def normalize(name: str) -> str:
    return name.strip().lower().replace("_", "-")


@functools.cache
def _catalog() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("catalog.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def _split(raw: dict[str, Any]) -> Split:
    return Split(kind=raw["kind"], name=raw.get("name", ""), train=raw["train"],
                 valid=raw["valid"], test=raw["test"], note=raw.get("note", ""))


def _standin(raw: dict[str, Any], num_classes: int | None, stored_edges: int) -> StandinSettings:
    classes = raw.get("num_classes", num_classes)
    if classes is None:
        raise ValueError("stand-in needs a class count")
    return StandinSettings(
        symmetric=bool(raw["symmetric"]), stored_edges=int(raw.get("stored_edges", stored_edges)),
        max_degree=int(raw["max_degree"]), gamma=float(raw["gamma"]),
        body_beta=float(raw["body_beta"]), homophily=float(raw["homophily"]),
        feature_signal=float(raw["feature_signal"]), num_classes=int(classes),
        num_classes_note=raw.get("num_classes_note", ""))


def _appearances(catalog: dict[str, Any]) -> dict[str, list[TableAppearance]]:
    by_dataset: dict[str, list[TableAppearance]] = {}
    for table_id, table in catalog["tables"].items():
        names = [c["name"] for c in table["columns"]]
        for row in table["rows"]:
            if row["edges_basis"] not in _EDGE_BASES:
                raise ValueError(f"{table_id}: unknown edges_basis {row['edges_basis']!r}")
            if len(row["cells"]) != len(names):
                raise ValueError(f"{table_id}: row {row['cells'][0]!r} has {len(row['cells'])} cells")
            by_dataset.setdefault(row["dataset"], []).append(TableAppearance(
                table_id=table_id, paper=table["paper"], label=table["label"],
                row_label=row["cells"][0], cells=dict(zip(names, row["cells"])),
                edges_basis=row["edges_basis"], note=row.get("note", "")))
    return by_dataset


def _dataset(name: str, raw: dict[str, Any], tables: list[TableAppearance]) -> DatasetSpec:
    if raw["features"] not in _FEATURE_KINDS or raw["feature_dtype"] not in _FEATURE_DTYPES:
        raise ValueError(f"{name}: bad features/feature_dtype")
    directed = bool(raw["directed"])
    stored = raw["edges"] if directed else 2 * raw["edges"]
    return DatasetSpec(
        name=name, title=raw["title"], aliases=tuple(raw.get("aliases", ())), source=raw["source"],
        url=raw["url"], nodes=int(raw["nodes"]), edges=int(raw["edges"]), directed=directed,
        feature_dim=int(raw["feature_dim"]), feature_dtype=raw["feature_dtype"],
        features=raw["features"], num_classes=raw.get("num_classes"), task=raw["task"],
        split=_split(raw["split"]),
        standin=_standin(raw["standin"], raw.get("num_classes"), stored),
        edges_note=raw.get("edges_note", ""), features_note=raw.get("features_note", ""),
        max_degree=raw.get("max_degree"), max_degree_note=raw.get("max_degree_note", ""),
        mentions=tuple(Mention(**m) for m in raw.get("mentions", ())),
        tables=tuple(tables), real=dict(raw.get("real", {})), sweep=raw.get("sweep"))


def _sweep_members(sweep_id: str, raw: dict[str, Any]) -> list[DatasetSpec]:
    members = []
    for k in raw["factors"]:
        edges = int(raw["edges_per_factor"]) * k
        standin = dict(raw["standin"])
        standin.setdefault("stored_edges", edges if raw["directed"] else 2 * edges)
        # Denser graphs keep arxiv's shape: the same degree profile scaled by k.
        standin["max_degree"] = min(int(standin["max_degree"]) * k, raw["nodes"] // 2)
        member = dict(raw, edges=edges, standin=standin,
                      title=f"{raw['title']}: {k}x", aliases=[p.format(k=k) for p in raw["alias_patterns"]],
                      sweep=sweep_id)
        members.append(_dataset(f"{sweep_id}-x{k}", member, []))
    return members


@functools.cache
def _registry() -> tuple[dict[str, DatasetSpec], dict[str, str]]:
    catalog = _catalog()
    appearances = _appearances(catalog)
    specs: dict[str, DatasetSpec] = {}
    for name, raw in catalog["datasets"].items():
        specs[name] = _dataset(name, raw, appearances.pop(name, []))
    for sweep_id, raw in catalog.get("sweeps", {}).items():
        for member in _sweep_members(sweep_id, raw):
            specs[member.name] = member
    if appearances:
        raise ValueError(f"tables name unknown datasets: {sorted(appearances)}")
    lookup: dict[str, str] = {}
    for name, spec in specs.items():
        for key in (name, *spec.aliases):
            norm = normalize(key)
            if lookup.get(norm, name) != name:
                raise ValueError(f"alias {key!r} names both {lookup[norm]} and {name}")
            lookup[norm] = name
    return specs, lookup


def list_datasets() -> list[DatasetSpec]:
    """Every registered dataset, in catalog order (density sweeps last)."""
    return list(_registry()[0].values())


def resolve(name: str) -> str:
    """Canonical name for a dataset name or alias; HarnessError if unknown."""
    specs, lookup = _registry()
    canonical = lookup.get(normalize(name))
    if canonical is None:
        close = sorted(n for n in specs if normalize(name)[:3] in normalize(n))[:5]
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise HarnessError(f"unknown dataset '{name}' (see `python -m harness data list`){hint}")
    return canonical


def get(name: str) -> DatasetSpec:
    """The spec of a dataset by name or alias (e.g. 'products', 'PA', 'UK_domain', '16x')."""
    return _registry()[0][resolve(name)]


def is_registered(name: str) -> bool:
    return normalize(name) in _registry()[1]


def table_ids() -> list[str]:
    return list(_catalog()["tables"])


def table_spec(table_id: str) -> TableSpec:
    tables = _catalog()["tables"]
    if table_id not in tables:
        raise HarnessError(f"unknown dataset table '{table_id}' (known: {', '.join(tables)})")
    raw = tables[table_id]
    return TableSpec(table_id=table_id, paper=raw["paper"], label=raw["label"],
                     caption=raw["caption"], location=raw["location"],
                     columns=tuple(raw["columns"]), rows=tuple(raw["rows"]),
                     printed=tuple(raw.get("printed", ("round",))))
