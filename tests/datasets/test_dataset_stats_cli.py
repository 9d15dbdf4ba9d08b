"""Degree statistics and the ``data`` subcommands."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from harness.datasets import degree_stats
from harness.datasets.cli import add_data_subcommands
from harness.datasets.graph import Graph
from harness.datasets.stats import power_law_tail
from harness.errors import HarnessError


def test_power_law_fit_recovers_a_known_exponent():
    rng = np.random.default_rng(0)
    gamma = 2.5
    # Discrete power law above 10 by inverse transform, mixed with a low-degree body.
    tail = np.floor((10 - 0.5) * (1 - rng.random(100_000)) ** (-1 / (gamma - 1)) + 0.5).astype(np.int64)
    body = rng.integers(1, 10, 100_000)
    fit = power_law_tail(np.concatenate([tail, body]))
    assert fit["gamma"] == pytest.approx(gamma, abs=0.08)
    assert 8 <= fit["xmin"] <= 20


def _star(n=6):
    # Node 0 connected to all others, symmetric.
    indptr = np.array([0, n - 1] + list(range(n, 2 * n - 1)), dtype=np.int64)
    indices = np.array(list(range(1, n)) + [0] * (n - 1), dtype=np.int32)
    empty = np.empty(0, dtype=np.int64)
    return Graph("star", n, 2 * (n - 1), indptr, indices, None, None, empty, empty, empty,
                 False, 1.0, {"symmetric": True})


def test_degree_stats_of_a_known_graph():
    stats = degree_stats(_star())
    assert (stats["max"], stats["min"], stats["mean"], stats["median"]) == (5, 1, 10 / 6, 1.0)
    assert stats["isolated"] == 0
    assert degree_stats(_star(), "in")["max"] == 5


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise HarnessError(message)


def _run(argv):
    parser = _Parser(prog="harness")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    add_data_subcommands(sub)
    args = parser.parse_args(argv)
    return args.handler(args)


def test_cli_list_shows_the_registry_and_local_copies(tmp_path, capsys):
    assert _run(["data", "prepare", "citeseer", "--scale", "1", "--data-root", str(tmp_path),
                 "--device", "cpu"]) == 0
    assert "3,327 nodes" in capsys.readouterr().out
    assert _run(["data", "list", "--data-root", str(tmp_path), "--verify"]) == 0
    out = capsys.readouterr().out
    for name in ("ogbn-products", "mag240m", "uk-2007-05", "bter-arxiv-x128", "twitter-2010"):
        assert name in out
    citeseer_line = next(line for line in out.splitlines() if line.startswith("│ citeseer"))
    assert "stand-ins: 1" in citeseer_line


def test_cli_stats_and_table(tmp_path, capsys):
    assert _run(["data", "stats", "cora", "--data-root", str(tmp_path), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "max degree" in out and "168" in out                 # Cora's published maximum
    assert _run(["data", "table", "mggcn.table1"]) == 0
    out = capsys.readouterr().out
    assert "PRODUCTS" in out and "NO" in out and "104 features as printed" in out


def test_cli_convert_then_load_a_custom_dataset(tmp_path, capsys):
    edges = tmp_path / "e.txt"
    edges.write_text("0 1\n1 2\n2 0\n")
    argv = ["data", "convert", str(edges), "--format", "snap", "--name", "triangle",
            "--symmetrize", "--data-root", str(tmp_path), "--device", "cpu"]
    assert _run(argv) == 0
    from harness.datasets import load

    graph = load("triangle", data_root=tmp_path)
    assert graph.num_nodes == 3 and graph.num_edges == 6
    with pytest.raises(HarnessError, match="--force"):
        _run(argv)


@pytest.mark.parametrize("argv,match", [
    (["data", "prepare", "nosuch"], "unknown dataset 'nosuch'"),
    (["data", "prepare", "cora", "--scale", "0"], "scale must be in"),
    (["data", "prepare", "cora", "--scale", "0.001"], "too few for its 7 classes"),
    (["data", "stats", "products", "--real"], "real dataset 'ogbn-products' not found"),
    (["data", "table", "xgnn.table9"], "unknown dataset table"),
    (["data", "convert", "missing.txt", "--format", "snap", "--name", "x"], "does not exist"),
])
def test_cli_bad_input_is_a_harness_error(tmp_path, argv, match):
    with pytest.raises(HarnessError, match=match):
        _run(argv + ["--data-root", str(tmp_path)] if argv[1] != "table" else argv)
