"""OGB node-property datasets through ogb's own API: a small dataset written by ogb.io.DatasetSaver in
OGB's on-disk format is read by ogb's NodePropPredDataset (no download), converted into the cache,
and trained on end to end on CPU as real data (skipped where ogb is not installed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ogb")

from harness import datasets  # noqa: E402
from harness.config import RunConfig  # noqa: E402
from harness.datasets.cache import real_dir  # noqa: E402
from harness.errors import HarnessError  # noqa: E402

N, E, DIM, CLASSES = 600, 4800, 16, 5


def write_ogb_products(data_root: Path, seed: int = 0) -> dict:
    """ogbn-products in OGB's on-disk format, written by ogb's DatasetSaver and placed where an OGB
    download unzips (``<root>/ogbn_products``); returns what was saved."""
    from ogb.io import DatasetSaver

    rng = np.random.default_rng(seed)
    labels = rng.integers(0, CLASSES, N)
    # edges within a class mostly, so that labels are learnable from neighbours
    src = rng.integers(0, N, E)
    same = rng.random(E) < 0.9
    by_class = [np.flatnonzero(labels == c) for c in range(CLASSES)]
    dst = np.where(same, [rng.choice(by_class[labels[s]]) for s in src], rng.integers(0, N, E))
    feat = (np.eye(CLASSES, DIM)[labels] + 0.5 * rng.standard_normal((N, DIM))).astype(np.float32)
    saver = DatasetSaver("ogbn-products", is_hetero=False, version=1, root=str(data_root / "saver"))
    saver.save_graph_list([{"num_nodes": N, "edge_index": np.stack([src, dst]).astype(np.int64),
                            "node_feat": feat, "edge_feat": None}])
    saver.save_target_labels(labels.reshape(-1, 1))
    perm = rng.permutation(N)
    split = {"train": perm[:360], "valid": perm[360:480], "test": perm[480:]}
    saver.save_split(split, "sales_ranking")
    saver.save_task_info("multiclass classification", "acc", num_classes=CLASSES)
    shutil.move(saver.dataset_dir, data_root / "ogbn_products")
    return {"src": src, "dst": dst, "feat": feat, "labels": labels, "split": split}


@pytest.fixture(scope="module")
def ogb_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("ogb-root")
    return root, write_ogb_products(root)


def test_datasetsaver_folder_loads_as_the_real_dataset(ogb_root):
    root, saved = ogb_root
    g = datasets.load("ogbn-products", data_root=root)
    assert not g.is_standin and g.num_nodes == N
    np.testing.assert_array_equal(np.asarray(g.labels), saved["labels"])
    np.testing.assert_allclose(np.asarray(g.features), saved["feat"])
    for part, idx in zip(("train", "valid", "test"), (g.train_idx, g.val_idx, g.test_idx)):
        np.testing.assert_array_equal(np.sort(np.asarray(idx)), np.sort(saved["split"][part]))
    # the stored CSR is the saved edge set, symmetrized (products is undirected), without loops or duplicates
    ip, ix = np.asarray(g.indptr), np.asarray(g.indices)
    got = {(int(r), int(c)) for r in range(N) for c in ix[ip[r]:ip[r + 1]]}
    want = {(int(a), int(b)) for a, b in zip(saved["src"], saved["dst"]) if a != b}
    want |= {(b, a) for a, b in want}
    assert got == want
    manifest = json.loads((real_dir(root, "ogbn-products") / "manifest.json").read_text())
    assert not (Path(root) / "harness_cache").exists()          # nothing written into the user's data root
    assert manifest["is_standin"] is False and manifest["source"]["layout"] == "ogb"


def test_stand_ins_stay_the_default_at_other_scales(ogb_root):
    root, _ = ogb_root
    assert datasets.load("ogbn-products", scale=0.001, data_root=root).is_standin


def test_malformed_ogb_folder_is_one_line_naming_it(tmp_path):
    write_ogb_products(tmp_path)
    data = tmp_path / "ogbn_products" / "raw" / "data.npz"
    data.write_bytes(data.read_bytes()[:200])                     # truncated
    with pytest.raises(HarnessError) as err:
        datasets.load("ogbn-products", data_root=tmp_path)
    text = str(err.value)
    assert "\n" not in text and str(tmp_path / "ogbn_products") in text


def test_table5_trains_on_the_ogb_dataset_as_real_data(ogb_root, tmp_path):
    from harness.report import report_runs
    from harness.runner import run as run_experiments
    from harness.store import load_run

    root, _ = ogb_root
    cfg = RunConfig(device="cpu", world_size=1, quick=True, scale=1.0, out_dir=tmp_path, data_root=root,
                    timeout_s=300, impl_patterns=("wholegraph",),
                    params={"datasets": "ogbn-products", "models": "sage", "epochs": "1", "warmup_batches": "0"})
    outcome = run_experiments(["wholegraph.table5"], cfg, ["test"])
    assert outcome.errors == 0
    rows = [r for r in load_run(outcome.store.path).rows if r["status"] == "ok"]
    epoch = next(r for r in rows if r["metric"] == "epoch_time")
    assert epoch["extra"]["graph"]["standin"] is False and epoch["extra"]["graph"]["nodes"] == N
    report_runs([outcome.store.path], tmp_path / "rep")
    assert "products (real data, 600 nodes" in (tmp_path / "rep" / "wholegraph" / "table5.md").read_text()


def test_fetch_errors_are_one_line(tmp_path, capsys):
    from harness.cli import main

    assert main(["data", "fetch", "friendster", "--data-root", str(tmp_path)]) != 0
    err = capsys.readouterr().err
    assert err.startswith("error:") and "not an OGB node-property dataset" in err and err.count("\n") == 1
