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


def _tree(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_stats_and_prepare_write_nothing_into_the_users_data_root(tmp_path, capsys):
    """`data stats` wrote a 4 GB stand-in into the data root: stand-ins and conversions go to the
    harness's cache ($HARNESS_CACHE_DIR, else ./data/harness_cache), the data root is only read."""
    import os

    from harness.datasets.cache import cache_root

    user = tmp_path / "my-datasets"
    (user / "ogbn_arxiv").mkdir(parents=True)
    (user / "ogbn_arxiv" / "README").write_text("mine")
    before = _tree(user)
    assert _run(["data", "stats", "cora", "--scale", "0.5", "--data-root", str(user), "--device", "cpu"]) == 0
    assert _run(["data", "prepare", "citeseer", "--scale", "0.5", "--data-root", str(user), "--device", "cpu"]) == 0
    assert _tree(user) == before
    assert cache_root() == tmp_path / "cache" and os.environ["HARNESS_CACHE_DIR"] == str(tmp_path / "cache")
    assert {p.name for p in (cache_root() / "standin").iterdir()} == {"cora", "citeseer"}
    assert _run(["data", "list", "--data-root", str(user)]) == 0
    out = capsys.readouterr().out
    assert f"cached in {cache_root()}" in " ".join(out.split())


def test_converting_a_file_under_a_registry_name_is_refused_unless_it_can_be_that_graph(tmp_path, capsys):
    """`data convert --name cora` replaced the papers' cora with a 3-node graph, without a word: a file
    converted under a registry name must have about its node count, or --force; either way the
    command says what the file now is."""
    from harness.datasets import load

    edges = tmp_path / "e.txt"
    edges.write_text("0 1\n1 2\n2 0\n")
    argv = ["data", "convert", str(edges), "--format", "snap", "--name", "cora", "--data-root", str(tmp_path),
            "--device", "cpu"]
    with pytest.raises(HarnessError, match=r"'cora' is the registry's cora \(2,708 nodes\); .* has 3: .*--force"):
        _run(argv)
    assert load("cora", 1.0, data_root=tmp_path, device="cpu").is_standin            # cora is untouched
    capsys.readouterr()
    assert _run(argv + ["--force"]) == 0
    assert "is now the real cora (registry: 2,708 nodes)" in " ".join(capsys.readouterr().out.split())
    assert load("cora", 1.0, data_root=tmp_path).num_nodes == 3                     # as the user asked

    ring = tmp_path / "citeseer.txt"                      # the size of the real citeseer: taken as it
    ring.write_text("".join(f"{i} {(i + 1) % 3300}\n" for i in range(3300)))
    assert _run(["data", "convert", str(ring), "--format", "snap", "--name", "citeseer", "--data-root",
                 str(tmp_path), "--device", "cpu"]) == 0
    assert "is now the real citeseer (registry: 3,327 nodes)" in " ".join(capsys.readouterr().out.split())
    assert not load("citeseer", 1.0, data_root=tmp_path).is_standin


def test_real_data_a_run_does_not_read_at_its_scale_is_said(tmp_path, capsys):
    """Real data under --data-root is read at --scale 1 only: `data list` and the run's plan say so
    instead of `real: ogb files` beside a run on stand-ins."""
    from harness import cli, datasets

    marker = tmp_path / "ogbn_products" / "raw" / "edge.csv.gz"
    marker.parent.mkdir(parents=True)
    marker.write_bytes(b"")
    at_scale = datasets.source("ogbn-products", 0.01, tmp_path)
    assert at_scale == (f"stand-in at scale 0.01; the real data (ogb files under {marker.parent}) is read at "
                        "--scale 1 only")
    assert datasets.source("ogbn-products", 1.0, tmp_path) == f"real (ogb files under {marker.parent})"
    assert datasets.source("reddit", 0.5, tmp_path) == "stand-in at scale 0.5"
    assert _run(["data", "list", "--data-root", str(tmp_path)]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("│ ogbn-products"))
    assert "real: ogb files, read at" in line
    assert cli.main(["run", "wholegraph.table5", "--device", "cpu", "--impl", "wholegraph", "--dry-run",
                     "--param", "datasets=ogbn-products", "--data-root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    (data,) = [ln for ln in out.splitlines() if ln.startswith("data: ")]
    assert data.startswith("data: ogbn-products: stand-in at scale ") and data.endswith("is read at --scale 1 only")
