"""Degree statistics of a graph, beside the real graph's published values where known.

The tail exponent is the discrete power-law MLE ``gamma = 1 + n / sum(ln(d / (xmin - 1/2)))``
over degrees ``d >= xmin``, with ``xmin`` chosen among ~40 log-spaced candidates by the smallest
Kolmogorov-Smirnov distance (Clauset, Shalizi & Newman 2009), computed on the degree histogram so a
billion-edge graph costs one pass.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .graph import Graph
from .registry import DatasetSpec

MIN_TAIL = 50


def power_law_tail(degrees: np.ndarray, candidates: int = 40) -> dict[str, float | int | None]:
    """Fitted tail exponent, its xmin, how many nodes the tail holds, and the KS distance."""
    hist = np.bincount(np.asarray(degrees, dtype=np.int64))
    values = np.flatnonzero(hist)
    values = values[values > 0]
    if len(values) < 3:
        return {"gamma": None, "xmin": None, "tail_nodes": 0, "ks": None}
    counts = hist[values].astype(np.float64)
    cumulative = np.cumsum(counts[::-1])[::-1]          # nodes with degree >= values[i]
    weighted_log = np.cumsum((counts * np.log(values))[::-1])[::-1]
    total = cumulative[0]
    median = values[np.searchsorted(np.cumsum(counts), total / 2)]
    enough = np.flatnonzero(cumulative >= MIN_TAIL)    # xmin candidates keeping >= MIN_TAIL nodes
    hi = values[enough[-1]] if len(enough) else values[0]
    lo = max(int(median), 2)
    hi = max(int(hi), lo)
    grid = np.unique(np.round(np.logspace(math.log10(lo), math.log10(hi), candidates)).astype(np.int64))
    best: dict[str, Any] = {"gamma": None, "xmin": None, "tail_nodes": 0, "ks": None}
    for xmin in grid:
        i = int(np.searchsorted(values, xmin))
        if i >= len(values):
            break
        n_tail = cumulative[i]
        if n_tail < MIN_TAIL:
            break
        log_sum = weighted_log[i] - n_tail * math.log(xmin - 0.5)
        if log_sum <= 0:
            continue
        gamma = 1.0 + n_tail / log_sum
        tail_values = values[i:]
        empirical = cumulative[i:] / n_tail                 # P(D >= x) in the tail
        model = ((tail_values - 0.5) / (xmin - 0.5)) ** (1.0 - gamma)
        ks = float(np.max(np.abs(empirical - model)))
        if best["ks"] is None or ks < best["ks"]:
            best = {"gamma": float(gamma), "xmin": int(xmin), "tail_nodes": int(n_tail), "ks": ks}
    return best


def degree_stats(graph: Graph, direction: str = "out") -> dict[str, Any]:
    """Degree distribution summary: mean, max, quantiles, isolated nodes and tail exponent.

    ``direction``: ``out`` (CSR rows; all neighbours for symmetric graphs) or ``in``.
    """
    if direction == "in":
        degrees = np.bincount(np.asarray(graph.indices), minlength=graph.num_nodes)
    elif direction == "out":
        degrees = np.diff(np.asarray(graph.indptr))
    else:
        raise ValueError(f"direction must be 'out' or 'in', got {direction!r}")
    tail = power_law_tail(degrees)
    n = max(graph.num_nodes, 1)
    return {
        "direction": direction, "nodes": graph.num_nodes, "edges": graph.num_edges,
        "mean": float(graph.num_edges / n), "max": int(degrees.max()) if len(degrees) else 0,
        "min": int(degrees.min()) if len(degrees) else 0,
        "median": float(np.median(degrees)) if len(degrees) else 0.0,
        "p90": float(np.percentile(degrees, 90)) if len(degrees) else 0.0,
        "p99": float(np.percentile(degrees, 99)) if len(degrees) else 0.0,
        "isolated": int((degrees == 0).sum()),
        "tail_exponent": tail["gamma"], "tail_xmin": tail["xmin"], "tail_nodes": tail["tail_nodes"],
        "tail_ks": tail["ks"],
    }


def published_degree_stats(spec: DatasetSpec) -> dict[str, Any]:
    """What is known about the real graph's degrees: the mean from the published counts (as the
    stand-in stores it), the maximum where commonly reported, nothing else (the four papers print
    no degree statistics)."""
    stored = spec.standin.stored_edges
    return {"nodes": spec.nodes, "edges": stored, "mean": stored / spec.nodes,
            "max": spec.max_degree, "max_note": spec.max_degree_note, "tail_exponent": None}


def standin_targets(graph: Graph) -> dict[str, Any]:
    """What the generator aimed at for this stand-in (from its manifest; see plan.py)."""
    params = graph.meta.get("generator", {})
    if not params:
        return {}
    return {"nodes": params["num_nodes"], "edges": params["stored_edges"],
            "mean": params["stored_edges"] / params["num_nodes"], "max": params["max_degree"],
            "tail_exponent": params["gamma"]}


def comparison_rows(graph: Graph, spec: DatasetSpec | None) -> list[dict[str, Any]]:
    """Rows of (statistic, this graph, stand-in target, real published) for a report."""
    measured = degree_stats(graph)
    target = standin_targets(graph) if graph.is_standin else {}
    real = published_degree_stats(spec) if spec is not None else {}
    rows = []
    for key, label in (("nodes", "nodes"), ("edges", "stored edges"), ("mean", "mean degree"),
                       ("max", "max degree"), ("median", "median degree"), ("p99", "p99 degree"),
                       ("isolated", "isolated nodes"), ("tail_exponent", "power-law tail exponent")):
        rows.append({"statistic": label, "measured": measured.get(key), "target": target.get(key),
                     "published": real.get(key)})
    rows[-1]["note"] = (f"fit above degree {measured['tail_xmin']} ({measured['tail_nodes']:,} nodes)"
                        if measured["tail_xmin"] else "")
    return rows
