"""The papers' dataset tables: as printed, as recomputed from the registry, and as measured.

Four tables: ``wholegraph.table2``, ``xgnn.table3``, ``mggcn.table1``, ``placement.table1``.

* :func:`paper_table` gives each row as the paper prints it (cell strings, column names as
  printed) plus a ``dataset`` key naming the registry entry.
* :func:`registry_table` recomputes the same cells from the registry's published counts, formatted
  like the printed cell (same unit suffix and decimals) so the two line up; with ``measure=True``
  it adds the same quantities measured from a real dataset or a scale-1.0 stand-in cached locally.
* :func:`compare_table` is the long form: one row per (dataset, column) with the paper's cell, the
  registry's value and whether they agree to the printed precision.

Units: the papers print byte volumes in binary units (XGNN's "40 GB" is 39.7 GiB: 41.65M x 256 x
4 bytes; ICS'22's "535MB" is 535.0 MiB), and XGNN's Volume_G counts 4-byte indptr and indices.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from .registry import DatasetSpec, TableSpec, get, table_spec

_SUFFIX = {"": 1, "K": 1e3, "M": 1e6, "B": 1e9}
_BYTES = {"B": 1, "KB": 2**10, "MB": 2**20, "GB": 2**30, "TB": 2**40}
_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
_CELL = re.compile(r"^\s*([0-9]+(?:\.([0-9]+))?)(\s*)([A-Za-z]*)\s*$")


def parse_cell(cell: str, kind: str) -> tuple[float, float]:
    """(value, one unit of the last printed digit) of a printed number like '61.9M' or '5.6 GB'."""
    m = _CELL.match(cell)
    if not m:
        raise ValueError(f"not a number: {cell!r}")
    number, decimals, _, unit = m.groups()
    scale = _BYTES[unit.upper()] if kind.endswith("_bytes") else _SUFFIX[unit.upper()]
    step = 10.0 ** -(len(decimals) if decimals else 0)
    return float(number) * scale, step * scale


def format_like(value: float, printed: str, kind: str) -> str:
    """``value`` written the way ``printed`` is: same unit suffix, decimals and spacing."""
    m = _CELL.match(printed)
    if not m:
        return f"{value:g}"
    _, decimals, space, unit = m.groups()
    scale = _BYTES[unit.upper()] if kind.endswith("_bytes") else _SUFFIX[unit.upper()]
    digits = len(decimals) if decimals else 0
    return f"{value / scale:.{digits}f}{space}{unit}"


def printed_matches(printed: str, value: float, kind: str, rules: tuple[str, ...] = ("round",)) -> bool:
    """True when ``value`` written at the printed cell's digits by one of the paper's ``rules``
    (``round``: half up; ``truncate``: toward zero) is exactly the printed number."""
    from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal

    m = _CELL.match(printed)
    if not m:
        raise ValueError(f"not a number: {printed!r}")
    number, decimals, _, unit = m.groups()
    scale = _BYTES[unit.upper()] if kind.endswith("_bytes") else _SUFFIX[unit.upper()]
    digits = Decimal(1).scaleb(-len(decimals)) if decimals else Decimal(1)
    exact = Decimal(repr(float(value))) / Decimal(repr(scale))
    modes = {"round": ROUND_HALF_UP, "truncate": ROUND_DOWN}
    unknown = set(rules) - set(modes)
    if unknown:
        raise ValueError(f"unknown printing rule(s) {sorted(unknown)} (round, truncate)")
    return any(exact.quantize(digits, rounding=modes[rule]) == Decimal(number) for rule in rules)


def edges_for_basis(spec: DatasetSpec, basis: str) -> int:
    """The edge count a paper's column reflects, from the registry's published numbers."""
    if basis == "published":
        return spec.edges
    if basis == "symmetrized":
        return spec.published_stored_edges
    if basis == "symmetrized_self_loops":
        return spec.published_stored_edges + spec.nodes
    if basis == "standin_stored":
        return spec.standin.stored_edges
    raise ValueError(f"unknown edges basis {basis!r}")


def _quantity(kind: str, column: dict[str, Any], nodes: int, edges: int, feature_dim: int,
              feature_bytes_per_value: int, num_classes: int | None) -> float | None:
    if kind == "nodes":
        return nodes
    if kind == "edges":
        return edges
    if kind == "feature_dim":
        return feature_dim
    if kind == "num_classes":
        return num_classes
    if kind == "avg_degree":
        return edges / nodes
    if kind == "topology_bytes":
        return (edges + nodes + 1) * int(column.get("id_bytes", 4))
    if kind == "feature_bytes":
        return nodes * feature_dim * feature_bytes_per_value
    raise ValueError(f"unknown column kind {kind!r}")


def paper_table(table_id: str) -> list[dict[str, str]]:
    """Rows of a paper's dataset table exactly as printed, each with its registry ``dataset``."""
    table = table_spec(table_id)
    return [{"dataset": row["dataset"], **dict(zip(table.column_names, row["cells"]))}
            for row in table.rows]


def table_caption(table_id: str) -> str:
    table = table_spec(table_id)
    return f"{table.label}: {table.caption}"


def _registry_values(table: TableSpec, row: dict[str, Any], spec: DatasetSpec) -> dict[str, float | None]:
    edges = edges_for_basis(spec, row["edges_basis"])
    classes = spec.num_classes if spec.num_classes is not None else spec.standin.num_classes
    return {c["name"]: _quantity(c["kind"], c, spec.nodes, edges, spec.feature_dim,
                                 _DTYPE_BYTES[spec.feature_dtype], classes)
            for c in table.columns if c["kind"] != "label"}


def _measured_values(table: TableSpec, row: dict[str, Any], spec: DatasetSpec,
                     graph: Any) -> dict[str, float | None]:
    symmetric = bool(graph.meta.get("symmetric", not spec.directed))
    stored = int(graph.num_edges)
    basis = row["edges_basis"]
    if basis == "published" and symmetric and not spec.directed:
        edges = stored // 2
    elif basis == "symmetrized_self_loops":
        edges = stored + graph.num_nodes
    else:
        edges = stored
    dim = graph.feature_dim
    value_bytes = graph.features.dtype.itemsize if graph.features is not None else 0
    return {c["name"]: _quantity(c["kind"], c, graph.num_nodes, edges, dim, value_bytes,
                                 graph.num_classes)
            for c in table.columns if c["kind"] != "label"}


def _render(table: TableSpec, row: dict[str, Any], values: dict[str, float | None]) -> dict[str, str]:
    out = {}
    printed = dict(zip(table.column_names, row["cells"]))
    for column in table.columns:
        name, kind = column["name"], column["kind"]
        if kind == "label":
            out[name] = printed[name]
            continue
        value = values.get(name)
        if value is None:
            out[name] = "-"
        elif kind == "avg_degree" or _CELL.match(printed[name]) is None:
            out[name] = str(round(value))
        else:
            out[name] = format_like(value, printed[name], kind)
    return out


def registry_table(table_id: str, data_root: str | Path | None = None,
                   measure: bool = False) -> list[dict[str, str]]:
    """The table's rows recomputed from the registry, formatted like the printed cells.

    With ``measure=True`` each row also gets ``<column> (measured)`` cells and ``measured_from``
    when a real dataset or a scale-1.0 stand-in of it is cached under ``data_root``.
    """
    table = table_spec(table_id)
    rows = []
    for row in table.rows:
        spec = get(row["dataset"])
        rendered = {"dataset": spec.name, **_render(table, row, _registry_values(table, row, spec))}
        if measure:
            graph, origin = _local_full_scale(spec.name, data_root)
            rendered["measured_from"] = origin
            if graph is not None:
                measured = _render(table, row, _measured_values(table, row, spec, graph))
                for column in table.columns:
                    if column["kind"] != "label":
                        rendered[f"{column['name']} (measured)"] = measured[column["name"]]
        rows.append(rendered)
    return rows


def compare_table(table_id: str, data_root: str | Path | None = None,
                  measure: bool = False) -> list[dict[str, Any]]:
    """One row per (dataset, column): printed cell, registry value, agreement, optional measure."""
    table = table_spec(table_id)
    out = []
    for row in table.rows:
        spec = get(row["dataset"])
        values = _registry_values(table, row, spec)
        rendered = _render(table, row, values)
        printed = dict(zip(table.column_names, row["cells"]))
        measured: dict[str, float | None] = {}
        origin = ""
        if measure:
            graph, origin = _local_full_scale(spec.name, data_root)
            if graph is not None:
                measured = _measured_values(table, row, spec, graph)
        for column in table.columns:
            name, kind = column["name"], column["kind"]
            if kind == "label":
                continue
            value = values[name]
            cell = printed[name]
            agrees = None
            if value is not None and _CELL.match(cell):
                agrees = printed_matches(cell, value, kind, table.printed)
            entry = {"table": table_id, "dataset": spec.name, "row": printed[table.column_names[0]],
                     "column": name, "paper": cell, "registry": rendered[name],
                     "registry_value": value, "matches": agrees, "note": row.get("note", "")}
            if measure:
                entry["measured_value"] = measured.get(name)
                entry["measured_from"] = origin
            out.append(entry)
    return out


def _local_full_scale(name: str, data_root: str | Path | None) -> tuple[Any, str]:
    """A locally cached full-size copy of ``name`` (real first, then a scale-1.0 stand-in)."""
    from . import cache

    found = cache.find_full_scale(name, data_root)
    if found is None:
        return None, ""
    directory, origin = found
    try:
        return cache.open_graph(directory), origin
    except Exception:  # a damaged cache is reported by `data list`, not by a table
        return None, ""


def rows_match_count(table_id: str) -> tuple[int, int]:
    """(cells that agree, cells compared): a one-line health figure for the registry."""
    rows = [r for r in compare_table(table_id) if r["matches"] is not None]
    return sum(1 for r in rows if r["matches"]), len(rows)


def describe_mismatches(table_id: str) -> list[str]:
    lines = []
    for r in compare_table(table_id):
        if r["matches"] is False:
            value = r["registry_value"]
            shown = f"{value:,.0f}" if isinstance(value, (int, float)) and not math.isnan(value) else value
            lines.append(f"{r['row']} {r['column']}: paper {r['paper']}, registry {r['registry']} "
                         f"({shown}){'; ' + r['note'] if r['note'] else ''}")
    return lines
