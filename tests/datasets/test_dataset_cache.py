"""The on-disk cache: zero-copy loads, reuse, damage detection and rebuild, atomic writes."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from harness.datasets import CacheWarning, load, prepare, standin_path
from harness.datasets.cache import CacheWriter, get_or_build, open_graph, verify_cache
from harness.errors import HarnessError

NAME, SCALE = "citeseer", 1.0


def _build_stamp(directory) -> tuple:
    created = json.loads((directory / "manifest.json").read_text())["created"]
    return created, (directory / "indices.bin").stat().st_mtime_ns


def test_load_generates_once_then_memory_maps_without_copying(tmp_path):
    first = load(NAME, SCALE, seed=0, data_root=tmp_path, device="cpu")
    assert first.is_standin and first.path == standin_path(NAME, SCALE, 0, tmp_path)
    stamp = _build_stamp(first.path)
    second = load(NAME, SCALE, seed=0, data_root=tmp_path, device="cpu")
    assert _build_stamp(second.path) == stamp                      # reused, not rebuilt
    for array in (second.indptr, second.indices, second.features, second.labels, second.train_idx):
        assert isinstance(array, np.memmap)
    tensors = second.tensors()
    assert tensors["features"].data_ptr() == second.features.ctypes.data   # zero-copy
    assert tensors["indices"].data_ptr() == second.indices.ctypes.data
    reference = np.fromfile(second.path / "indices.bin", dtype=np.int32)
    assert np.array_equal(second.indices, reference)
    # Copy-on-write: writing through the array never changes the file.
    second.features[0, 0] = 12345.0
    assert np.fromfile(second.path / "features.bin", dtype=np.float32, count=1)[0] != 12345.0


def test_seed_scale_and_overrides_get_their_own_cache(tmp_path):
    a = standin_path(NAME, 1.0, 0, tmp_path)
    assert a != standin_path(NAME, 1.0, 1, tmp_path)
    assert a != standin_path(NAME, 0.5, 0, tmp_path)
    assert a != standin_path(NAME, 1.0, 0, tmp_path, feature_dtype="float16")
    assert "g1-" in a.name and "seed-0" in a.name and "scale-1" in a.name


@pytest.mark.parametrize("damage", ["truncate", "flip", "manifest", "missing"])
def test_damaged_cache_is_detected_warned_and_rebuilt(tmp_path, damage):
    directory = prepare(NAME, SCALE, 0, tmp_path, device="cpu")
    good = open_graph(directory)
    good_indices = np.array(good.indices)
    del good
    target = directory / ("indices.bin" if damage != "manifest" else "manifest.json")
    if damage == "truncate":
        with open(target, "r+b") as f:
            f.truncate(target.stat().st_size - 4)
    elif damage == "flip":
        data = bytearray(target.read_bytes())
        data[len(data) // 2] ^= 0xFF
        target.write_bytes(bytes(data))
    elif damage == "manifest":
        target.write_text("{not json")
    else:
        target.unlink()
    ok, reason = verify_cache(directory)
    assert not ok and reason
    with pytest.raises(HarnessError, match="damaged"):
        open_graph(directory)
    with pytest.warns(CacheWarning, match="damaged"):
        graph = load(NAME, SCALE, seed=0, data_root=tmp_path, device="cpu")
    assert verify_cache(directory) == (True, "")
    assert np.array_equal(graph.indices, good_indices)


def test_failed_build_leaves_no_cache_and_no_temp_dir(tmp_path):
    final = tmp_path / "standin" / "x" / "key"

    def broken(writer: CacheWriter):
        writer.add_array("indptr", np.zeros(3, dtype=np.int64))
        raise RuntimeError("generator crashed")

    with pytest.raises(RuntimeError):
        get_or_build(final, broken)
    assert not final.exists()
    assert [p.name for p in final.parent.iterdir() if ".tmp-" in p.name] == []


def test_stale_temp_dirs_of_dead_builders_are_cleaned(tmp_path):
    directory = standin_path(NAME, SCALE, 0, tmp_path)
    directory.parent.mkdir(parents=True)
    stale = directory.parent / f".{directory.name}.tmp-999999999-deadbeef"
    stale.mkdir()
    prepare(NAME, SCALE, 0, tmp_path, device="cpu")
    assert not stale.exists() and directory.exists()


def test_manifest_records_sizes_checksums_and_generator(tmp_path):
    directory = prepare(NAME, SCALE, 0, tmp_path, device="cpu")
    manifest = json.loads((directory / "manifest.json").read_text())
    files = manifest["files"]
    for field in ("indptr", "indices", "features", "labels", "train_idx", "val_idx", "test_idx"):
        entry = files[field]
        assert entry["bytes"] == os.path.getsize(directory / entry["file"])
        assert len(entry["digest"]) == 32
    assert files["indptr"]["dtype"] == "int64" and files["indices"]["dtype"] == "int32"
    assert manifest["generator"]["generator_version"] == 1 and manifest["seed"] == 0
    assert "blake2b" in manifest["checksum"]


def test_prefer_real_falls_back_to_the_standin_and_require_real_names_paths(tmp_path):
    graph = load("cora", 1.0, data_root=tmp_path, device="cpu")
    assert graph.is_standin
    with pytest.raises(HarnessError) as info:
        load("ogbn-products", data_root=tmp_path, require_real=True)
    message = str(info.value)
    assert "\n" not in message
    assert str(tmp_path / "ogbn_products" / "raw" / "edge.csv.gz") in message
    assert "products.zip" in message


def test_verify_full_finds_a_flipped_bit_the_sampled_checksum_misses(tmp_path, capsys):
    from harness import cli
    from harness.datasets import cache

    directory = prepare("ogbn-products", 0.01, 0, tmp_path, device="cpu")
    features = directory / "features.bin"
    size = features.stat().st_size
    assert size > cache.DIGEST_BLOCKS * cache.DIGEST_BLOCK_BYTES          # sampled, not hashed whole
    starts = np.linspace(0, size - cache.DIGEST_BLOCK_BYTES, cache.DIGEST_BLOCKS).astype(np.int64)
    gap = int(starts[0]) + cache.DIGEST_BLOCK_BYTES + 100                # between the first two blocks
    assert gap < starts[1]
    with open(features, "r+b") as fh:
        fh.seek(gap)
        byte = fh.read(1)
        fh.seek(gap)
        fh.write(bytes([byte[0] ^ 1]))
    assert cli.main(["data", "verify", "--data-root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"ok  {directory}" in out and "sampled checksums; --full hashes every byte" in out
    assert cli.main(["data", "verify", "products", "--full", "--data-root", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"FAILED  {directory}: features: checksum mismatch" in out and "1 failed" in out
    assert cli.main(["data", "verify", "ogbn-arxiv", "--data-root", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: no cached copy of ogbn-arxiv")
