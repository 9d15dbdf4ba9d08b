"""Real-data loaders, each fed a tiny fixture written in that exact on-disk format."""

from __future__ import annotations

import gzip
import json
import pickle

import numpy as np
import pandas as pd
import pytest

from harness.datasets import load, prepare_real
from harness.datasets.cache import CacheWriter, open_graph, real_dir
from harness.datasets.loaders import convert_edge_list, edge_list_chunks, read_gnnlab_meta
from harness.datasets.registry import get
from harness.errors import HarnessError

N = 40
RNG = np.random.default_rng(7)
SRC = RNG.integers(0, N, 300)
DST = RNG.integers(0, N, 300)
FEATS = RNG.standard_normal((N, 6)).astype(np.float32)
LABELS = RNG.integers(0, 5, N)


def expected_csr(src, dst, n, symmetric):
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    if symmetric:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    keep = src != dst
    keys = np.unique(src[keep] * n + dst[keep])
    indptr = np.concatenate([[0], np.cumsum(np.bincount(keys // n, minlength=n))])
    return indptr, keys % n


def assert_csr(graph, src, dst, n, symmetric):
    indptr, indices = expected_csr(src, dst, n, symmetric)
    assert graph.num_nodes == n and graph.meta["symmetric"] == symmetric
    assert np.array_equal(graph.indptr, indptr)
    assert np.array_equal(graph.indices, indices)


def _csv_gz(path, array):
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(np.asarray(array)).to_csv(path, header=False, index=False, compression="gzip")


def _ogb_splits(directory, name):
    for part, idx in (("train", np.arange(0, 20)), ("valid", np.arange(20, 30)), ("test", np.arange(30, 40))):
        _csv_gz(directory / "split" / name / f"{part}.csv.gz", idx.reshape(-1, 1))


def test_ogb_csv_layout_directed(tmp_path):
    d = tmp_path / "ogbn_arxiv"
    _csv_gz(d / "raw" / "edge.csv.gz", np.stack([SRC, DST], 1))
    _csv_gz(d / "raw" / "num-node-list.csv.gz", [[N]])
    _csv_gz(d / "raw" / "num-edge-list.csv.gz", [[len(SRC)]])
    _csv_gz(d / "raw" / "node-feat.csv.gz", FEATS)
    _csv_gz(d / "raw" / "node-label.csv.gz", LABELS.reshape(-1, 1))
    _ogb_splits(d, "time")
    graph = load("ogbn-arxiv", data_root=tmp_path, device="cpu")
    assert not graph.is_standin
    assert_csr(graph, SRC, DST, N, symmetric=False)            # arxiv stays directed
    assert np.allclose(graph.features, FEATS, atol=1e-6)
    assert np.array_equal(graph.labels, LABELS)
    assert np.array_equal(graph.val_idx, np.arange(20, 30))
    assert graph.path == real_dir(tmp_path, "ogbn-arxiv")


def test_ogb_npz_layout_is_streamed_and_symmetrized(tmp_path):
    d = tmp_path / "ogbn_papers100M"
    (d / "raw").mkdir(parents=True)
    np.savez_compressed(d / "raw" / "data.npz", edge_index=np.stack([SRC, DST]).astype(np.int64),
                        node_feat=FEATS, num_nodes_list=np.array([N]),
                        num_edges_list=np.array([len(SRC)]))
    labels = LABELS.astype(np.float32)
    labels[::3] = np.nan                                       # OGB: NaN = unlabelled
    np.savez_compressed(d / "raw" / "node-label.npz", node_label=labels.reshape(-1, 1))
    _ogb_splits(d, "time")
    from harness.datasets import loaders

    old = loaders.EDGE_CHUNK
    loaders.EDGE_CHUNK = 37                                    # many chunks through the streams
    try:
        graph = load("ogbn-papers100M", data_root=tmp_path, device="cpu")
    finally:
        loaders.EDGE_CHUNK = old
    assert_csr(graph, SRC, DST, N, symmetric=True)             # as WholeGraph stored it
    assert np.array_equal(graph.features, FEATS)
    assert np.all(graph.labels[::3] == -1) and np.array_equal(graph.labels[1::3], LABELS[1::3])


def test_mag240m_layout_references_the_float16_features(tmp_path):
    d = tmp_path / "mag240m_kddcup2021"
    (d / "processed" / "paper").mkdir(parents=True)
    (d / "processed" / "paper___cites___paper").mkdir(parents=True)
    feats = FEATS.astype(np.float16)
    np.save(d / "processed" / "paper" / "node_feat.npy", feats)
    np.save(d / "processed" / "paper" / "node_label.npy", LABELS.astype(np.float64))
    np.save(d / "processed" / "paper___cites___paper" / "edge_index.npy", np.stack([SRC, DST]))
    import torch

    torch.save({"train": np.arange(10), "valid": np.arange(10, 15), "test-dev": np.arange(15, 20),
                "test-challenge": np.arange(20, 25)}, d / "split_dict.pt")
    graph = load("MAG240M", data_root=tmp_path, device="cpu")
    assert_csr(graph, SRC, DST, N, symmetric=False)
    assert graph.features.dtype == np.float16 and np.array_equal(graph.features, feats)
    manifest = json.loads((graph.path / "manifest.json").read_text())
    assert manifest["files"]["features"]["path"].endswith("node_feat.npy")   # not copied
    assert np.array_equal(graph.test_idx, np.arange(15, 20))


def _gnnlab(directory, wide=False, with_feat=True):
    directory.mkdir(parents=True)
    indptr, indices = expected_csr(SRC, DST, N, True)
    id_dtype = np.uint64 if wide else np.uint32
    suffix = "64" if wide else ""
    indptr.astype(id_dtype).tofile(directory / f"indptr{suffix}.bin")
    indices.astype(id_dtype).tofile(directory / f"indices{suffix}.bin")
    if with_feat:
        np.repeat(FEATS, 2, axis=1).astype(np.float32).tofile(directory / "feat.bin")
        LABELS.astype(np.uint64).tofile(directory / "label.bin")
    for stem, idx in (("train_set", [1, 2, 3]), ("valid_set", [4]), ("test_set", [5, 6])):
        np.array(idx, dtype=id_dtype).tofile(directory / f"{stem}{suffix}.bin")
    (directory / "meta.txt").write_text(
        f"NUM_NODE\t{N}\nNUM_EDGE\t{len(indices)}\nFEAT_DIM\t12\nNUM_CLASS\t5\n"
        "NUM_TRAIN_SET 3\nNUM_VALID_SET 1\nNUM_TEST_SET 2\n")
    return indptr, indices


@pytest.mark.parametrize("wide", [False, True])
def test_gnnlab_xgnn_layout(tmp_path, wide):
    indptr, indices = _gnnlab(tmp_path / "gnnlab" / "products", wide=wide)
    graph = load("ogbn-products", data_root=tmp_path, device="cpu")
    assert not graph.is_standin
    assert np.array_equal(graph.indptr, indptr) and np.array_equal(graph.indices, indices)
    assert graph.indices.dtype == (np.int64 if wide else np.int32)
    assert np.array_equal(graph.features, np.repeat(FEATS, 2, axis=1))
    assert np.array_equal(graph.labels, LABELS)
    assert np.array_equal(graph.train_idx, [1, 2, 3]) and np.array_equal(graph.test_idx, [5, 6])
    assert read_gnnlab_meta(tmp_path / "gnnlab" / "products" / "meta.txt")["NUM_CLASS"] == 5


def test_gnnlab_without_features_gets_random_ones_like_the_papers(tmp_path):
    _gnnlab(tmp_path / "gnnlab" / "twitter", with_feat=False)
    graph = load("TW", data_root=tmp_path, device="cpu")
    assert graph.features.shape == (N, 256)                    # XGNN: 256 random features
    assert graph.meta["random_features"] and graph.meta["random_labels"]
    assert 0.9 < graph.features.std() < 1.1


def test_gnnlab_sizes_that_disagree_with_meta_are_rejected(tmp_path):
    _gnnlab(tmp_path / "gnnlab" / "products")
    with open(tmp_path / "gnnlab" / "products" / "indices.bin", "ab") as f:
        f.write(b"\0\0\0\0")
    with pytest.raises(HarnessError, match="indices.bin"):
        load("products", data_root=tmp_path, device="cpu")


@pytest.mark.parametrize("with_meta_json", [False, True])
def test_wholegraph_layout(tmp_path, with_meta_json):
    d = tmp_path / "wholegraph" / "ogbn_papers100M"
    d.mkdir(parents=True)
    indptr, indices = expected_csr(SRC, DST, N, True)
    indptr.astype(np.int64).tofile(d / "homograph_csr_row_ptr")
    indices.astype(np.int32).tofile(d / "homograph_csr_col_idx")
    if with_meta_json:
        feats = np.tile(FEATS, 2).astype(np.float16)           # 12 float16 columns
        feats.tofile(d / "node_feat.bin")
        (d / "ogbn_papers100M_meta.json").write_text(json.dumps({"nodes": [{
            "name": "paper", "has_emb": True, "emb_file_prefix": "ogbn_papers100M_node_feat_paper",
            "num_nodes": N, "emb_dim": 12, "dtype": "float16"}]}))
    else:
        feats = np.tile(FEATS, 64)[:, :128].astype(np.float32)  # registry width 128 -> float32
        feats.tofile(d / "node_feat.bin")
    with open(d / "ogbn_papers100M_data_and_label.pkl", "wb") as f:
        pickle.dump({"train_idx": np.array([3, 1]), "train_label": np.array([2.0, 4.0], np.float32),
                     "valid_idx": np.array([7]), "valid_label": np.array([1.0]),
                     "test_idx": np.array([9]), "test_label": np.array([0.0])}, f)
    graph = load("papers100M", data_root=tmp_path, device="cpu")
    assert np.array_equal(graph.indptr, indptr) and np.array_equal(graph.indices, indices)
    assert np.array_equal(graph.features, feats)
    assert graph.labels[3] == 2 and graph.labels[1] == 4 and graph.labels[0] == -1
    assert np.array_equal(graph.train_idx, [1, 3])


def test_graphsaint_layout(tmp_path):
    d = tmp_path / "graphsaint" / "reddit"
    d.mkdir(parents=True)
    indptr, indices = expected_csr(SRC, DST, N, True)
    np.savez(d / "adj_full.npz", indices=indices.astype(np.int32), indptr=indptr.astype(np.int32),
             format=np.array(b"csr"), shape=np.array([N, N]), data=np.ones(len(indices)))
    np.save(d / "feats.npy", FEATS)
    (d / "class_map.json").write_text(json.dumps({str(i): int(c) for i, c in enumerate(LABELS)}))
    (d / "role.json").write_text(json.dumps({"tr": list(range(30)), "va": [30, 31], "te": [35]}))
    graph = load("reddit", data_root=tmp_path, device="cpu")
    assert np.array_equal(graph.indptr, indptr) and np.array_equal(graph.indices, indices)
    assert np.array_equal(graph.features, FEATS) and np.array_equal(graph.labels, LABELS)
    assert np.array_equal(graph.test_idx, [35])


def _convert(tmp_path, path, fmt, name, **kwargs):
    directory = tmp_path / "out"
    writer = CacheWriter(directory)
    meta = convert_edge_list(path, fmt, writer, name=name, spec=get(name) if name == "friendster" else None,
                             device="cpu", **kwargs)
    writer.commit(meta)
    return open_graph(directory)


def test_snap_text_gz_with_comments(tmp_path):
    path = tmp_path / "edges.txt.gz"
    with gzip.open(path, "wt") as f:
        f.write("# Directed graph\n# FromNodeId\tToNodeId\n")
        f.writelines(f"{s}\t{d}\n" for s, d in zip(SRC, DST))
    graph = _convert(tmp_path, path, "snap", "mine", num_nodes=N)
    assert_csr(graph, SRC, DST, N, symmetric=False)
    assert len(graph.train_idx) == 0                           # no labels given: no split


def test_konect_text_is_one_based_and_extra_columns_are_ignored(tmp_path):
    path = tmp_path / "out.friendster"
    lines = ["% sym unweighted", f"% {len(SRC)} {N} {N}"]
    lines += [f"{s + 1} {d + 1} 1 1262304000" for s, d in zip(SRC, DST)]
    path.write_text("\n".join(lines) + "\n")
    graph = _convert(tmp_path, path, "konect", "friendster", num_nodes=N)
    assert_csr(graph, SRC, DST, N, symmetric=True)             # registry: stored undirected
    assert graph.features.shape == (N, 128) and graph.meta["random_features"]


@pytest.mark.parametrize("fmt,dtype", [("bin32", np.int32), ("bin64", np.int64)])
def test_binary_pairs(tmp_path, fmt, dtype):
    path = tmp_path / f"edges.{fmt}"
    np.stack([SRC, DST], 1).astype(dtype).tofile(path)
    features = tmp_path / "x.npy"
    np.save(features, FEATS)
    labels = tmp_path / "y.npy"
    np.save(labels, LABELS)
    graph = _convert(tmp_path, path, fmt, "mine", num_nodes=N, symmetrize=True, features=features,
                     labels=labels)
    assert_csr(graph, SRC, DST, N, symmetric=True)
    assert np.array_equal(graph.features, FEATS) and np.array_equal(graph.labels, LABELS)
    together = np.concatenate([graph.train_idx, graph.val_idx, graph.test_idx])
    assert sorted(together) == list(range(N))                  # labelled nodes split 80/10/10


def test_sparse_ids_are_relabelled(tmp_path):
    path = tmp_path / "sparse.txt"
    path.write_text("1000 5\n5 70000\n70000 1000\n")
    graph = _convert(tmp_path, path, "snap", "mine", relabel="yes")
    assert graph.num_nodes == 3
    assert np.array_equal(np.fromfile(graph.path / "original_ids.bin", dtype=np.int64), [5, 1000, 70000])
    assert graph.num_edges == 3


def test_bad_edge_lists_are_one_line_errors(tmp_path):
    odd = tmp_path / "odd.bin32"
    np.arange(3, dtype=np.int32).tofile(odd)
    with pytest.raises(HarnessError, match="not a whole number"):
        list(edge_list_chunks(odd, "bin32"))
    text = tmp_path / "bad.txt"
    text.write_text("1 2\nthree four\n")
    with pytest.raises(HarnessError, match="not a snap edge list"):
        list(edge_list_chunks(text, "snap"))
    with pytest.raises(HarnessError, match="unknown edge list format"):
        list(edge_list_chunks(text, "csv"))
    too_big = tmp_path / "ids.txt"
    too_big.write_text("0 1\n1 2\n")
    with pytest.raises(HarnessError, match="node id 2 >= node count 2"):
        _convert(tmp_path, too_big, "snap", "mine", num_nodes=2)


def test_missing_real_dataset_names_every_path_and_how_to_get_it(tmp_path):
    with pytest.raises(HarnessError) as info:
        prepare_real("friendster", tmp_path)
    message = str(info.value)
    assert "\n" not in message
    assert str(tmp_path / "gnnlab" / "friendster" / "meta.txt") in message
    assert str(real_dir(tmp_path, "friendster") / "manifest.json") in message
    assert "konect.cc" in message and "data convert" in message


# --- malformed or truncated files: one error line naming the file, exit 2 ---------------------

def _truncate(path, keep=0.5):
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def _ogb_arxiv(root):
    d = root / "ogbn_arxiv"
    src, dst = np.tile(SRC, 400), np.tile(DST, 400)          # long enough that a cut gzip ends mid-stream
    _csv_gz(d / "raw" / "edge.csv.gz", np.stack([src, dst], 1))
    _csv_gz(d / "raw" / "num-node-list.csv.gz", [[N]])
    _csv_gz(d / "raw" / "node-feat.csv.gz", FEATS)
    _csv_gz(d / "raw" / "node-label.csv.gz", LABELS.reshape(-1, 1))
    _ogb_splits(d, "time")
    return d


def _ogb_papers(root):
    d = root / "ogbn_papers100M"
    (d / "raw").mkdir(parents=True)
    np.savez_compressed(d / "raw" / "data.npz", edge_index=np.stack([SRC, DST]).astype(np.int64),
                        node_feat=FEATS, num_nodes_list=np.array([N]), num_edges_list=np.array([len(SRC)]))
    np.savez_compressed(d / "raw" / "node-label.npz", node_label=LABELS.astype(np.float32).reshape(-1, 1))
    _ogb_splits(d, "time")
    return d


def _damage_text(path, text):
    with gzip.open(path, "wt") as f:
        f.write(text)


DAMAGE = {
    "truncated edges": (_ogb_arxiv, "ogbn-arxiv", "raw/edge.csv.gz", _truncate),
    "features not gzip": (_ogb_arxiv, "ogbn-arxiv", "raw/node-feat.csv.gz", lambda p: p.write_text("1,2\n")),
    "labels not numbers": (_ogb_arxiv, "ogbn-arxiv", "raw/node-label.csv.gz", lambda p: _damage_text(p, "a\nb\n")),
    "empty node count": (_ogb_arxiv, "ogbn-arxiv", "raw/num-node-list.csv.gz", lambda p: _damage_text(p, "")),
    "truncated split": (_ogb_arxiv, "ogbn-arxiv", "split/time/valid.csv.gz", lambda p: _truncate(p, 0.3)),
    "truncated npz": (_ogb_papers, "ogbn-papers100M", "raw/data.npz", _truncate),
    "labels npz garbage": (_ogb_papers, "ogbn-papers100M", "raw/node-label.npz", lambda p: p.write_bytes(b"PK\x03\x04junk")),
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_a_malformed_ogb_file_is_one_error_line_naming_it(tmp_path, capsys, case):
    from harness import cli

    make, name, rel, damage = DAMAGE[case]
    path = make(tmp_path) / rel
    damage(path)
    code = cli.main(["data", "prepare", name, "--real", "--data-root", str(tmp_path), "--device", "cpu"])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()                   # progress lines, then the one error line
    assert lines[-1].startswith(f"error: {path}: ") and sum(ln.startswith("error") for ln in lines) == 1, err
    assert "Traceback" not in err
    assert not (real_dir(tmp_path, get(name).name) / "manifest.json").exists()     # nothing cached


def test_a_malformed_processed_ogb_file_is_one_error_line_naming_it(tmp_path):
    d = tmp_path / "ogbn_arxiv" / "processed"
    d.mkdir(parents=True)
    (d / "data_processed").write_bytes(b"\x80\x04not a pickle")
    with pytest.raises(HarnessError) as info:
        prepare_real("ogbn-arxiv", tmp_path, device="cpu")
    assert str(info.value).startswith(f"{d / 'data_processed'}: ") and "\n" not in str(info.value)


@pytest.mark.parametrize("damage", ["truncated", "not gzip"])
def test_a_malformed_snap_file_is_one_error_line_naming_it(tmp_path, capsys, damage):
    from harness import cli

    path = tmp_path / "edges.txt.gz"
    with gzip.open(path, "wt") as f:
        f.writelines(f"{s}\t{d}\n" for s, d in zip(np.tile(SRC, 400), np.tile(DST, 400)))
    if damage == "truncated":
        _truncate(path)
    else:
        path.write_bytes(b"\x1f\x8b\x08\x00garbage")
    code = cli.main(["data", "convert", str(path), "--format", "snap", "--name", "mine",
                     "--data-root", str(tmp_path), "--device", "cpu"])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and lines[-1].startswith(f"error: {path}: ") and "Traceback" not in err, err
