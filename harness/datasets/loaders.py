"""Real datasets from the layouts their sources and the papers' converters write.  No downloads.

Every loader converts once into the graph cache (``<cache>/real/<name>/``, see cache.py: the
harness's own folder, never the data root)
and the cache is memory-mapped from then on.  Large binary files that already have the cache's
element layout (WholeGraph's CSR, GNNLab's features, MAG240M's features) are referenced in place,
not copied.  Edges are always stored as a CSR without duplicates or self loops; symmetrized when
the paper stored the graph undirected (the registry's stand-in setting), overridable.

Layouts searched, in this order (``find_real``):

``<cache>/real/<name>/manifest.json``
    an earlier conversion (in the cache, not the data root).

Then under the data root:

OGB node property prediction, ``<root>/<ogb_dir>/`` (e.g. ``ogbn_products``), as OGB unzips it:
    ``raw/edge.csv.gz`` (``src,dst`` lines), ``raw/num-node-list.csv.gz``, ``raw/node-feat.csv.gz``
    (comma-separated rows), ``raw/node-label.csv.gz``; or, for binary sets (papers100M),
    ``raw/data.npz`` (``edge_index`` [2, E], ``node_feat``, ``num_nodes_list``) and
    ``raw/node-label.npz`` (``node_label``, NaN = unlabelled), streamed member by member so
    papers100M converts in bounded memory; or ``processed/data_processed`` (OGB's torch.save of
    ``{'graph', 'labels'}``).  Splits: ``split/<type>/{train,valid,test}.csv.gz`` or
    ``split/<type>/split_dict.pt``.  When the ``ogb`` package is installed and the directory is an
    OGB release (``RELEASE_v*.txt`` present, as a download or ``ogb.io.DatasetSaver`` leaves it),
    ogb's own ``NodePropPredDataset`` reads it (ogb_api.py: no download, CSV or binary files);
    papers100M stays streamed by the readers here (ogb would load its 80 GB at once).

OGB-LSC MAG240M, ``<root>/mag240m_kddcup2021/``:
    ``processed/paper/node_feat.npy`` (float16, referenced in place), ``processed/paper/node_label.npy``,
    ``processed/paper___cites___paper/edge_index.npy``, ``split_dict.pt``.  Paper nodes only.

GNNLab / XGNN converter output, ``<root>/gnnlab/<dir>/``:
    ``meta.txt`` (``KEY<whitespace>VALUE`` lines: NUM_NODE, NUM_EDGE, FEAT_DIM, NUM_CLASS,
    NUM_TRAIN_SET, NUM_VALID_SET, NUM_TEST_SET), ``indptr.bin`` / ``indices.bin`` (uint32) or
    ``indptr64.bin`` / ``indices64.bin`` (uint64), optional ``feat.bin`` (float32 [N, FEAT_DIM]),
    ``label.bin`` (uint64), ``train_set.bin`` / ``valid_set.bin`` / ``test_set.bin`` (uint32, or
    ``*64.bin``).  Their CSR is taken as stored (their converters write in-neighbour rows).

WholeGraph converter output, ``<root>/wholegraph/<dir>/``:
    ``homograph_csr_row_ptr`` (int64 [N+1]), ``homograph_csr_col_idx`` (int32 [E]), optional
    ``node_feat.bin`` (row-major; dtype and width from a ``*_meta.json`` if present, else inferred
    from its size and the registry's feature width: 4 bytes/value -> float32, 2 -> float16), and
    ``*_data_and_label.pkl`` (a pickle of ``train_idx``, ``valid_idx``, ``test_idx`` and
    ``train_label`` / ``valid_label`` / ``test_label``).

GraphSAINT release, ``<root>/graphsaint/<dir>/``:
    ``adj_full.npz`` (scipy CSR), ``feats.npy``, ``class_map.json``, ``role.json``.

Edge lists (``python -m harness data convert``): SNAP text (``src dst`` per line, ``#`` comments,
ids as given), KONECT text (``%`` comments, 1-based ids, extra columns ignored), ``bin32`` /
``bin64`` (flat little-endian ``src, dst`` pairs); ``.gz`` text is read directly.

Where the source has no features, labels or splits (KONECT, SNAP, WebGraph), the papers generate
random ones; so does the cache: uniform noise features of the registry's width and uniform random
labels, split by the registry's sizes (manifest: ``random_features`` / ``random_labels``).
"""

from __future__ import annotations

import json
import os
import pickle
import zipfile
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from ..errors import HarnessError
from . import rng
from .backends import Backend, select_backend
from .cache import CacheWriter, data_root, real_dir
from .edges import EdgeBuckets
from .registry import DatasetSpec

Progress = Callable[[str, float], None]
EDGE_CHUNK = 1 << 24
FEATURE_CHUNK_BYTES = 1 << 27
EDGE_LIST_FORMATS = ("snap", "konect", "bin32", "bin64")


# ---------------------------------------------------------------------------------------------
# reading a file: its failures become one error line naming it
# ---------------------------------------------------------------------------------------------

# What gzip, zipfile, pandas, numpy, pickle and torch.load raise on truncated or malformed input.
READ_ERRORS = (EOFError, OSError, ValueError, KeyError, IndexError, zlib.error, zipfile.BadZipFile,
               pickle.UnpicklingError, RuntimeError)


def _problem(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}".strip().rstrip(":")[:200]


@contextmanager
def reading(path: Path) -> Iterator[None]:
    """Any failure to read or parse ``path`` inside the block is one HarnessError naming it."""
    try:
        yield
    except HarnessError:
        raise
    except FileNotFoundError:
        raise HarnessError(f"{path}: missing") from None
    except READ_ERRORS as exc:
        raise HarnessError(f"{path}: {_problem(exc)} (truncated or malformed?)") from None


def reading_chunks(path: Path, chunks: Iterator) -> Iterator:
    """``chunks``, a lazy reader of ``path``, with its failures named as ``reading`` does."""
    with reading(path):
        yield from chunks


# ---------------------------------------------------------------------------------------------
# finding a dataset
# ---------------------------------------------------------------------------------------------

def candidate_paths(spec: DatasetSpec, root: str | os.PathLike | None) -> list[tuple[str, Path]]:
    """(layout, marker file) pairs searched for ``spec`` under ``root``, in order."""
    base = data_root(root)
    real = spec.real
    out: list[tuple[str, Path]] = [("cache", real_dir(root, spec.name) / "manifest.json")]
    if "ogb_dir" in real:
        d = base / real["ogb_dir"]
        out += [("ogb", d / "raw" / "edge.csv.gz"), ("ogb", d / "raw" / "data.npz"),
                ("ogb", d / "processed" / "data_processed")]
    if "mag240m_dir" in real:
        out.append(("mag240m", base / real["mag240m_dir"] / "processed" / "paper" / "node_feat.npy"))
    for d in dict.fromkeys([*real.get("gnnlab_dirs", []), spec.name]):
        out.append(("gnnlab", base / "gnnlab" / d / "meta.txt"))
    for d in dict.fromkeys([*real.get("wholegraph_dirs", []), spec.name]):
        out.append(("wholegraph", base / "wholegraph" / d / "homograph_csr_row_ptr"))
    for d in dict.fromkeys(real.get("graphsaint_dirs", [])):
        out.append(("graphsaint", base / "graphsaint" / d / "adj_full.npz"))
    return out


def find_real(spec: DatasetSpec, root: str | os.PathLike | None) -> tuple[str, Path] | None:
    for layout, marker in candidate_paths(spec, root):
        if marker.exists():
            return layout, marker
    return None


def missing_message(spec: DatasetSpec, root: str | os.PathLike | None) -> str:
    searched = ", ".join(str(p) for _, p in candidate_paths(spec, root))
    how = spec.real.get("obtain", f"see {spec.url}")
    return (f"real dataset '{spec.name}' not found under {data_root(root).resolve()}: looked for "
            f"{searched}; to get it: {how}")


def convert_real(spec: DatasetSpec, layout: str, marker: Path, writer: CacheWriter, *,
                 symmetrize: bool | None = None, device: str = "auto",
                 progress: Progress | None = None) -> dict[str, Any]:
    """Fill ``writer`` from the layout ``find_real`` found; returns manifest metadata."""
    report = progress or (lambda stage, fraction: None)
    backend = select_backend(device)
    sym = spec.standin.symmetric if symmetrize is None else symmetrize
    try:
        meta = _convert_layout(spec, layout, marker, writer, backend, sym, report)
    except HarnessError:
        raise
    except READ_ERRORS as exc:         # a reader without its own file name: name the folder
        raise HarnessError(f"{marker.parent}: cannot convert {spec.name} ({layout} layout): "
                           f"{_problem(exc)}") from None
    _complete(spec, writer, meta)
    meta.update(name=spec.name, kind="real", is_standin=False, scale=1.0, seed=None,
                source={"layout": layout, "path": str(marker.parent.resolve()),
                        "backend": backend.describe() if layout in ("ogb", "mag240m") else "copy"})
    return meta


def _convert_layout(spec, layout, marker, writer, backend, sym, report) -> dict[str, Any]:
    if layout == "ogb":
        meta = _convert_ogb(spec, marker.parent.parent, writer, backend, sym, report)
    elif layout == "mag240m":
        meta = _convert_mag240m(spec, marker.parents[2], writer, backend, sym, report)
    elif layout == "gnnlab":
        meta = _convert_gnnlab(spec, marker.parent, writer, report)
    elif layout == "wholegraph":
        meta = _convert_wholegraph(spec, marker.parent, writer, report)
    elif layout == "graphsaint":
        meta = _convert_graphsaint(spec, marker.parent, writer, report)
    else:
        raise HarnessError(f"unknown layout {layout}")
    return meta


# ---------------------------------------------------------------------------------------------
# building blocks
# ---------------------------------------------------------------------------------------------

def csr_from_edge_chunks(chunks: Iterator[tuple[np.ndarray, np.ndarray]], num_nodes: int,
                         symmetrize: bool, backend: Backend, expected_edges: int,
                         report: Progress) -> tuple[np.ndarray, np.ndarray]:
    """De-duplicated, loop-free CSR from (src, dst) chunks, through the generator's pipeline."""
    n = int(num_nodes)
    buckets = EdgeBuckets(n, symmetrize, backend, expected_edges * (2 if symmetrize else 1))
    seen = 0
    for src, dst in chunks:
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        if len(src) and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
            raise HarnessError(f"edge list has node ids outside [0, {n}); pass the node count or "
                               f"relabel the ids")
        keys = np.where(src == dst, np.iinfo(np.int64).max, src * n + dst)
        if symmetrize:
            back = np.where(src == dst, np.iinfo(np.int64).max, dst * n + src)
            keys = np.concatenate([keys, back])
        buckets.add(backend.from_host(keys))
        seen += len(src)
        report("edges", min(1.0, seen / max(expected_edges, 1)))
    buckets.dedup()
    index_dtype = np.int32 if n < 2**31 else np.int64
    indptr, indices = buckets.write_csr(None, 0, index_dtype, lambda f: report("csr", f))
    buckets.release()
    return indptr, indices


def _labels_from_float(raw: np.ndarray) -> np.ndarray:
    """OGB stores labels as floats with NaN for unlabelled nodes; the cache uses int64 and -1."""
    raw = np.asarray(raw)
    if raw.ndim == 2 and raw.shape[1] == 1:
        raw = raw[:, 0]
    if raw.ndim == 2:
        return raw.astype(np.int64)
    if np.issubdtype(raw.dtype, np.floating):
        out = np.full(raw.shape, -1, dtype=np.int64)
        ok = ~np.isnan(raw)
        out[ok] = raw[ok].astype(np.int64)
        return out
    return raw.astype(np.int64)


def _write_splits(writer: CacheWriter, train, valid, test) -> None:
    for field, idx in (("train_idx", train), ("val_idx", valid), ("test_idx", test)):
        writer.add_array(field, np.sort(np.asarray(idx, dtype=np.int64).ravel()))


def _read_csv_column(path: Path, dtype=np.int64) -> np.ndarray:
    import pandas as pd

    with reading(path):
        return pd.read_csv(path, header=None).values.astype(dtype)


def _copy_features(writer: CacheWriter, blocks: Iterator[np.ndarray], dtype: str,
                   shape: tuple[int, int]) -> None:
    with open(writer.path("features"), "wb") as f:
        for block in blocks:
            np.ascontiguousarray(block).tofile(f)
    writer.register("features", dtype, shape)


def _npy_offset(path: Path) -> tuple[tuple[int, ...], np.dtype, int, bool]:
    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        reader = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                  else np.lib.format.read_array_header_2_0)
        shape, fortran, dtype = reader(f)
        return shape, dtype, f.tell(), fortran


# ---------------------------------------------------------------------------------------------
# OGB
# ---------------------------------------------------------------------------------------------

class _NpzMember:
    """Streams one array of an .npz (compressed or not) without loading it."""

    def __init__(self, archive: Path, key: str):
        self.zip = zipfile.ZipFile(archive)
        self.name = key if key.endswith(".npy") else f"{key}.npy"
        handle = self.zip.open(self.name)
        version = np.lib.format.read_magic(handle)
        reader = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                  else np.lib.format.read_array_header_2_0)
        self.shape, self.fortran, self.dtype = reader(handle)
        self.data_offset = handle.tell()
        handle.close()

    def stream(self, start_element: int = 0) -> Any:
        handle = self.zip.open(self.name)
        handle.seek(self.data_offset + start_element * self.dtype.itemsize)
        return handle

    def read(self, handle, count: int) -> np.ndarray:
        data = handle.read(count * self.dtype.itemsize)
        return np.frombuffer(data, dtype=self.dtype)

    def full(self) -> np.ndarray:
        with self.stream() as handle:
            return self.read(handle, int(np.prod(self.shape))).reshape(self.shape)


def _ogb_split(directory: Path, split_type: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    split = directory / "split" / split_type
    if (split / "split_dict.pt").exists():
        import torch

        # split_dict.pt is OGB's own pickle of index arrays in the user's data root.
        with reading(split / "split_dict.pt"):
            d = torch.load(split / "split_dict.pt", weights_only=False)
            return np.asarray(d["train"]), np.asarray(d["valid"]), np.asarray(d["test"])
    if not (split / "train.csv.gz").exists():
        raise HarnessError(f"{directory}: no split found under {split}")
    parts = [_read_csv_column(split / f"{k}.csv.gz").ravel() for k in ("train", "valid", "test")]
    return parts[0], parts[1], parts[2]


def _ogb_via_package(spec: DatasetSpec, directory: Path) -> tuple[dict, np.ndarray, tuple] | None:
    """The folder through ogb's NodePropPredDataset (ogb_api.py) where ogb is installed and the folder
    is an OGB release; binary sets stay streamed (ogb would load papers100M's 80 GB at once)."""
    if spec.real.get("ogb_binary"):
        return None
    from .ogb_api import read_node_dataset

    return read_node_dataset(spec.name, directory, spec.real.get("ogb_split"))


def _ogb_graph_csr(graph: dict, sym, backend, report):
    """(nodes, indptr, indices, node features or None) of an OGB graph dict (``edge_index``
    converted in chunks)."""
    n = int(graph["num_nodes"])
    edge_index = graph["edge_index"]
    chunks = ((edge_index[0, i:i + EDGE_CHUNK], edge_index[1, i:i + EDGE_CHUNK])
              for i in range(0, edge_index.shape[1], EDGE_CHUNK))
    indptr, indices = csr_from_edge_chunks(chunks, n, sym, backend, edge_index.shape[1], report)
    return n, indptr, indices, graph.get("node_feat")


def _convert_ogb(spec, directory: Path, writer, backend, sym, report) -> dict[str, Any]:
    raw = directory / "raw"
    via_package = _ogb_via_package(spec, directory)
    if via_package is not None:
        graph, labels, split = via_package
        n, indptr, indices, feats = _ogb_graph_csr(graph, sym, backend, report)
    elif (raw / "data.npz").exists():
        data = raw / "data.npz"
        with reading(data):
            n = int(_NpzMember(data, "num_nodes_list").full().sum())
            edges = _NpzMember(data, "edge_index")
        count = int(edges.shape[1])

        def npz_chunks():
            with edges.stream(0) as src_h, edges.stream(count) as dst_h:
                for start in range(0, count, EDGE_CHUNK):
                    take = min(EDGE_CHUNK, count - start)
                    yield edges.read(src_h, take), edges.read(dst_h, take)

        indptr, indices = csr_from_edge_chunks(reading_chunks(data, npz_chunks()), n, sym, backend, count, report)
        feats = None
        with reading(data), zipfile.ZipFile(data) as archive:
            has_features = "node_feat.npy" in archive.namelist()
        if has_features:
            with reading(data):
                member = _NpzMember(data, "node_feat")
            rows = max(1, FEATURE_CHUNK_BYTES // (member.shape[1] * member.dtype.itemsize))

            def feature_blocks():
                with member.stream() as handle:
                    for start in range(0, n, rows):
                        take = min(rows, n - start)
                        yield member.read(handle, take * member.shape[1]).astype(np.float32)
                        report("features", (start + take) / n)

            _copy_features(writer, reading_chunks(data, feature_blocks()), "float32", (n, int(member.shape[1])))
        label_file = raw / "node-label.npz"
        with reading(label_file), np.load(label_file) as z:
            labels = _labels_from_float(z[z.files[0]])
        split = _ogb_split(directory, spec.real.get("ogb_split", ""))
    elif (raw / "edge.csv.gz").exists():
        import pandas as pd

        n = int(_read_csv_column(raw / "num-node-list.csv.gz").sum())

        def edge_chunks():
            for c in pd.read_csv(raw / "edge.csv.gz", header=None, dtype=np.int64, chunksize=EDGE_CHUNK):
                yield c[0].to_numpy(), c[1].to_numpy()

        chunks = reading_chunks(raw / "edge.csv.gz", edge_chunks())
        indptr, indices = csr_from_edge_chunks(chunks, n, sym, backend, spec.edges, report)
        feats = None
        feat_file = raw / "node-feat.csv.gz"
        if feat_file.exists():
            def feature_rows():
                for c in pd.read_csv(feat_file, header=None, dtype=np.float32, chunksize=1 << 18):
                    yield c.to_numpy(dtype=np.float32)

            with reading(feat_file):
                width = pd.read_csv(feat_file, header=None, nrows=1).shape[1]
            _copy_features(writer, reading_chunks(feat_file, feature_rows()), "float32", (n, width))
        with reading(raw / "node-label.csv.gz"):
            labels = _labels_from_float(pd.read_csv(raw / "node-label.csv.gz", header=None).to_numpy())
        split = _ogb_split(directory, spec.real.get("ogb_split", ""))
    else:  # processed/data_processed only
        import torch

        # OGB's own torch.save of numpy arrays in the user's data root.
        with reading(directory / "processed" / "data_processed"):
            loaded = torch.load(directory / "processed" / "data_processed", weights_only=False)
            graph, labels = loaded["graph"], loaded["labels"]
        n, indptr, indices, feats = _ogb_graph_csr(graph, sym, backend, report)
        split = _ogb_split(directory, spec.real.get("ogb_split", ""))
    if feats is not None:
        writer.add_array("features", np.asarray(feats, dtype=np.float32))
    writer.add_array("indptr", indptr)
    writer.add_array("indices", indices)
    writer.add_array("labels", _labels_from_float(labels))
    _write_splits(writer, *split)
    return {"num_nodes": n, "num_edges": int(indptr[-1]), "symmetric": sym}


def _convert_mag240m(spec, directory: Path, writer, backend, sym, report) -> dict[str, Any]:
    processed = directory / "processed"
    feat_path = processed / "paper" / "node_feat.npy"
    shape, dtype, offset, fortran = _npy_offset(feat_path)
    if fortran or len(shape) != 2:
        raise HarnessError(f"{feat_path}: expected a C-order matrix")
    n = int(shape[0])
    edge_index = np.load(processed / "paper___cites___paper" / "edge_index.npy", mmap_mode="r")
    chunks = ((edge_index[0, i:i + EDGE_CHUNK], edge_index[1, i:i + EDGE_CHUNK])
              for i in range(0, edge_index.shape[1], EDGE_CHUNK))
    indptr, indices = csr_from_edge_chunks(chunks, n, sym, backend, edge_index.shape[1], report)
    writer.add_array("indptr", indptr)
    writer.add_array("indices", indices)
    writer.register_external("features", feat_path, str(dtype), shape, offset)
    writer.add_array("labels", _labels_from_float(np.load(processed / "paper" / "node_label.npy")))
    import torch

    # OGB-LSC's own pickle of index arrays in the user's data root.
    split = torch.load(directory / "split_dict.pt", weights_only=False)
    _write_splits(writer, split["train"], split["valid"], split.get("test-dev", split.get("test", [])))
    return {"num_nodes": n, "num_edges": int(indptr[-1]), "symmetric": sym}


# ---------------------------------------------------------------------------------------------
# the papers' converters and GraphSAINT
# ---------------------------------------------------------------------------------------------

def read_gnnlab_meta(path: Path) -> dict[str, int]:
    meta = {}
    for line in Path(path).read_text().splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        try:
            meta[parts[0]] = int(parts[1])
        except ValueError:
            raise HarnessError(f"{path}: bad line {line!r} (expected KEY VALUE)") from None
    if "NUM_NODE" not in meta or "NUM_EDGE" not in meta:
        raise HarnessError(f"{path}: needs NUM_NODE and NUM_EDGE")
    return meta


def _expect_size(path: Path, count: int, itemsize: int) -> None:
    size = path.stat().st_size
    if size != count * itemsize:
        raise HarnessError(f"{path}: {size} bytes, expected {count} x {itemsize} (corrupt or "
                           f"not matching meta)")


def _convert_gnnlab(spec, directory: Path, writer, report) -> dict[str, Any]:
    meta = read_gnnlab_meta(directory / "meta.txt")
    n, e = meta["NUM_NODE"], meta["NUM_EDGE"]
    wide = (directory / "indptr64.bin").exists() and (directory / "indices64.bin").exists()
    suffix, id_dtype = ("64", np.uint64) if wide else ("", np.uint32)
    indptr_path = directory / f"indptr{suffix}.bin"
    indices_path = directory / f"indices{suffix}.bin"
    _expect_size(indptr_path, n + 1, np.dtype(id_dtype).itemsize)
    _expect_size(indices_path, e, np.dtype(id_dtype).itemsize)
    indptr = np.fromfile(indptr_path, dtype=id_dtype).astype(np.int64)
    if indptr[0] != 0 or indptr[-1] != e or np.any(np.diff(indptr) < 0):
        raise HarnessError(f"{indptr_path}: not a valid CSR row pointer for {e} edges")
    writer.add_array("indptr", indptr)
    # Same bits as int32/int64 below 2**31 / 2**63 ids: reference, don't copy.
    writer.register_external("indices", indices_path, "int64" if wide else "int32", (e,))
    dim = meta.get("FEAT_DIM", 0)
    feat = directory / "feat.bin"
    if dim and feat.exists() and feat.stat().st_size == n * dim * 4:
        writer.register_external("features", feat, "float32", (n, dim))
    label = directory / "label.bin"
    if label.exists() and label.stat().st_size == n * 8:
        writer.register_external("labels", label, "int64", (n,))
    for field, stem in (("train_idx", "train_set"), ("val_idx", "valid_set"), ("test_idx", "test_set")):
        path64, path32 = directory / f"{stem}64.bin", directory / f"{stem}.bin"
        if path64.exists():
            writer.add_array(field, np.sort(np.fromfile(path64, dtype=np.uint64).astype(np.int64)))
        elif path32.exists():
            writer.add_array(field, np.sort(np.fromfile(path32, dtype=np.uint32).astype(np.int64)))
    report("csr", 1.0)
    return {"num_nodes": n, "num_edges": e, "symmetric": None, "num_classes": meta.get("NUM_CLASS"),
            "rows": "as stored by the GNNLab converter"}


def _wholegraph_feature_layout(directory: Path, n: int, spec: DatasetSpec) -> tuple[Path, str, int] | None:
    metas = sorted(directory.glob("*_meta.json"))
    if metas:
        node = json.loads(metas[0].read_text())["nodes"][0]
        if node.get("has_emb"):
            parts = sorted(directory.glob(f"{node['emb_file_prefix']}_part_*"))
            candidates = [p for p in [directory / "node_feat.bin", *parts] if p.exists() and p.stat().st_size]
            if candidates:
                return candidates[0], node.get("dtype", "float32"), int(node["emb_dim"])
    path = directory / "node_feat.bin"
    if not path.exists():
        return None
    per_row = path.stat().st_size / n
    if per_row == 4 * spec.feature_dim:
        return path, "float32", spec.feature_dim
    if per_row == 2 * spec.feature_dim:
        return path, "float16", spec.feature_dim
    if per_row.is_integer() and per_row % 4 == 0:
        return path, "float32", int(per_row // 4)
    raise HarnessError(f"{path}: {path.stat().st_size} bytes is not {n} rows of float32/float16 "
                       f"features")


def _convert_wholegraph(spec, directory: Path, writer, report) -> dict[str, Any]:
    row_ptr = directory / "homograph_csr_row_ptr"
    col_idx = directory / "homograph_csr_col_idx"
    if row_ptr.stat().st_size % 8:
        raise HarnessError(f"{row_ptr}: size is not a multiple of 8 (int64 row pointer)")
    indptr = np.memmap(row_ptr, dtype=np.int64, mode="r")
    n = len(indptr) - 1
    e = int(indptr[-1])
    _expect_size(col_idx, e, 4)
    if indptr[0] != 0:
        raise HarnessError(f"{row_ptr}: does not start at 0")
    writer.register_external("indptr", row_ptr, "int64", (n + 1,))
    writer.register_external("indices", col_idx, "int32", (e,))
    layout = _wholegraph_feature_layout(directory, n, spec)
    if layout is not None:
        path, dtype, dim = layout
        _expect_size(path, n * dim, np.dtype(dtype).itemsize)
        writer.register_external("features", path, dtype, (n, dim))
    pickles = sorted(directory.glob("*_data_and_label.pkl"))
    if pickles:
        with open(pickles[0], "rb") as f:
            # The converter's own pickle of index and label arrays in the user's data root.
            data = pickle.load(f)  # noqa: S301
        labels = np.full(n, -1, dtype=np.int64)
        splits = []
        for part in ("train", "valid", "test"):
            idx = np.asarray(data.get(f"{part}_idx", []), dtype=np.int64).ravel()
            lab = data.get(f"{part}_label")
            if lab is not None and len(idx):
                labels[idx] = np.asarray(lab).astype(np.float64).ravel().astype(np.int64)
            splits.append(idx)
        writer.add_array("labels", labels)
        _write_splits(writer, *splits)
    report("csr", 1.0)
    return {"num_nodes": n, "num_edges": e, "symmetric": True}


def _convert_graphsaint(spec, directory: Path, writer, report) -> dict[str, Any]:
    with np.load(directory / "adj_full.npz") as z:
        indptr = z["indptr"].astype(np.int64)
        indices = z["indices"]
        shape = tuple(z["shape"])
    n = int(shape[0])
    # adj_full may hold explicit duplicates or loops; normalize through the edge pipeline.
    src = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    indptr, indices = csr_from_edge_chunks(iter([(src, indices.astype(np.int64))]), n, False,
                                           select_backend("cpu"), len(indices), report)
    writer.add_array("indptr", indptr)
    writer.add_array("indices", indices)
    feats = directory / "feats.npy"
    if feats.exists():
        fshape, fdtype, offset, fortran = _npy_offset(feats)
        if not fortran and len(fshape) == 2 and fshape[0] == n and str(fdtype) in ("float32", "float16"):
            writer.register_external("features", feats, str(fdtype), fshape, offset)
        else:
            writer.add_array("features", np.load(feats).astype(np.float32))
    class_map = json.loads((directory / "class_map.json").read_text())
    first = next(iter(class_map.values()))
    if isinstance(first, list):
        labels = np.zeros((n, len(first)), dtype=np.int64)
        for key, value in class_map.items():
            labels[int(key)] = value
    else:
        labels = np.full(n, -1, dtype=np.int64)
        keys = np.fromiter((int(k) for k in class_map), dtype=np.int64, count=len(class_map))
        labels[keys] = np.fromiter(class_map.values(), dtype=np.int64, count=len(class_map))
    writer.add_array("labels", labels)
    role = json.loads((directory / "role.json").read_text())
    _write_splits(writer, role["tr"], role["va"], role["te"])
    return {"num_nodes": n, "num_edges": int(indptr[-1]), "symmetric": True}


# ---------------------------------------------------------------------------------------------
# filling what the source lacks, as the papers do
# ---------------------------------------------------------------------------------------------

def _complete(spec: DatasetSpec, writer: CacheWriter, meta: dict[str, Any]) -> None:
    n = meta["num_nodes"]
    keys = rng.stream_keys(0)
    if "features" not in writer.entries and spec.feature_dim:
        dim = spec.feature_dim
        rows = max(1, FEATURE_CHUNK_BYTES // (4 * dim))

        def blocks():
            for start in range(0, n, rows):
                take = min(rows, n - start)
                elements = np.arange(start * dim, (start + take) * dim, dtype=np.int64)
                yield rng.noise_np(keys["features"], elements).astype(np.float32).reshape(take, dim)

        _copy_features(writer, blocks(), "float32", (n, dim))
        meta["random_features"] = True
    if "labels" not in writer.entries:
        classes = spec.standin.num_classes
        random_labels = rng.hash_np(keys["centroids"], np.arange(n)) % np.uint64(classes)
        writer.add_array("labels", random_labels.astype(np.int64))
        meta["random_labels"] = True
        meta.setdefault("num_classes", classes)
    if "train_idx" not in writer.entries:
        order = np.argsort(rng.hash_np(keys["split"], np.arange(n, dtype=np.int64)), kind="stable")
        a, b, c = spec.split.counts(n, spec.nodes)
        _write_splits(writer, order[:a], order[a:a + b], order[a + b:a + b + c])
        meta["random_split"] = True
    if meta.get("num_classes") is None:
        meta["num_classes"] = spec.num_classes or spec.standin.num_classes
    meta.setdefault("feature_dim", writer.entries["features"]["shape"][1] if "features" in writer.entries else 0)
    meta.setdefault("feature_dtype", writer.entries["features"]["dtype"] if "features" in writer.entries else None)


# ---------------------------------------------------------------------------------------------
# user edge lists
# ---------------------------------------------------------------------------------------------

def edge_list_chunks(path: Path, fmt: str, chunk: int = EDGE_CHUNK) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(src, dst) int64 chunks of an edge list in ``fmt`` (ids as in the file, 0-based)."""
    path = Path(path)
    if fmt not in EDGE_LIST_FORMATS:
        raise HarnessError(f"unknown edge list format '{fmt}' (one of {', '.join(EDGE_LIST_FORMATS)})")
    if not path.exists():
        raise HarnessError(f"edge list {path} does not exist")
    if fmt in ("bin32", "bin64"):
        dtype = np.int32 if fmt == "bin32" else np.int64
        if path.stat().st_size % (2 * np.dtype(dtype).itemsize):
            raise HarnessError(f"{path}: size {path.stat().st_size} is not a whole number of "
                               f"{fmt} (src, dst) pairs")
        pairs = np.memmap(path, dtype=dtype, mode="r").reshape(-1, 2)
        for start in range(0, len(pairs), chunk):
            block = np.asarray(pairs[start:start + chunk], dtype=np.int64)
            yield block[:, 0], block[:, 1]
        return
    import pandas as pd

    comment = "#" if fmt == "snap" else "%"
    offset = 1 if fmt == "konect" else 0
    try:
        reader = pd.read_csv(path, sep=r"\s+", comment=comment, header=None, usecols=[0, 1],
                             dtype=np.int64, chunksize=chunk, engine="c")
        for block in reader:
            values = block.to_numpy()
            yield values[:, 0] - offset, values[:, 1] - offset
    except pd.errors.EmptyDataError:
        return
    except (ValueError, pd.errors.ParserError) as exc:
        raise HarnessError(f"{path}: not a {fmt} edge list ({str(exc).splitlines()[0]})") from None
    except READ_ERRORS as exc:
        raise HarnessError(f"{path}: {_problem(exc)} (truncated or malformed?)") from None


def convert_edge_list(path: Path, fmt: str, writer: CacheWriter, *, name: str,
                      spec: DatasetSpec | None, num_nodes: int | None = None,
                      symmetrize: bool | None = None, relabel: str = "auto",
                      features: Path | None = None, feature_dim: int | None = None,
                      feature_dtype: str = "float32", labels: Path | None = None,
                      device: str = "auto", progress: Progress | None = None) -> dict[str, Any]:
    """A user's edge list (plus optional features/labels) into the cache format."""
    report = progress or (lambda stage, fraction: None)
    backend = select_backend(device)
    sym = symmetrize if symmetrize is not None else (spec.standin.symmetric if spec else False)
    ids = None
    max_id, count = -1, 0
    for src, dst in edge_list_chunks(path, fmt):
        if len(src):
            max_id = max(max_id, int(src.max()), int(dst.max()))
            if min(int(src.min()), int(dst.min())) < 0:
                raise HarnessError(f"{path}: negative node id (is it a {fmt} file?)")
        count += len(src)
    if count == 0:
        raise HarnessError(f"{path}: no edges")
    n = num_nodes if num_nodes is not None else max_id + 1
    if relabel not in ("auto", "yes", "no"):
        raise HarnessError(f"relabel must be auto, yes or no, got '{relabel}'")
    if relabel == "yes" or (relabel == "auto" and num_nodes is None and spec is not None
                            and max_id + 1 > spec.nodes):
        ids = np.unique(np.concatenate([np.unique(np.concatenate(c)) for c in edge_list_chunks(path, fmt)]))
        n = len(ids) if num_nodes is None else num_nodes
    if max_id >= n and ids is None:
        raise HarnessError(f"{path}: node id {max_id} >= node count {n}")

    def chunks():
        for src, dst in edge_list_chunks(path, fmt):
            if ids is not None:
                src, dst = np.searchsorted(ids, src), np.searchsorted(ids, dst)
            yield src, dst

    indptr, indices = csr_from_edge_chunks(chunks(), n, sym, backend, count, report)
    writer.add_array("indptr", indptr)
    writer.add_array("indices", indices)
    if ids is not None:
        writer.add_array("original_ids", ids.astype(np.int64))
    meta: dict[str, Any] = {"num_nodes": n, "num_edges": int(indptr[-1]), "symmetric": sym,
                            "edge_list": {"path": str(Path(path).resolve()), "format": fmt,
                                          "lines": count, "relabelled": ids is not None}}
    if features is not None:
        _convert_feature_file(Path(features), writer, n, feature_dim, feature_dtype)
    if labels is not None:
        raw = np.load(labels) if str(labels).endswith(".npy") else np.fromfile(labels, dtype=np.int64)
        if len(raw) != n:
            raise HarnessError(f"{labels}: {len(raw)} labels for {n} nodes")
        writer.add_array("labels", _labels_from_float(raw))
    if spec is not None:
        _complete(spec, writer, meta)
    else:
        _complete_custom(writer, meta)
    meta.update(name=name, kind="real", is_standin=False, scale=1.0, seed=None,
                source={"layout": "edge_list", "path": str(Path(path).resolve())})
    return meta


def _convert_feature_file(path: Path, writer: CacheWriter, n: int, dim: int | None, dtype: str) -> None:
    if not path.exists():
        raise HarnessError(f"feature file {path} does not exist")
    if path.suffix == ".npy":
        array = np.load(path, mmap_mode="r")
        if array.ndim != 2 or array.shape[0] != n:
            raise HarnessError(f"{path}: shape {array.shape}, expected ({n}, dim)")
        stored = str(array.dtype) if str(array.dtype) in ("float32", "float16") else "float32"
        rows = max(1, FEATURE_CHUNK_BYTES // (array.shape[1] * 4))
        _copy_features(writer, (np.asarray(array[i:i + rows], dtype=stored) for i in range(0, n, rows)),
                       stored, (n, int(array.shape[1])))
        return
    if dim is None:
        raise HarnessError(f"{path}: raw feature files need --feat-dim")
    if dtype not in ("float32", "float16"):
        raise HarnessError(f"feature dtype must be float32 or float16, got '{dtype}'")
    _expect_size(path, n * dim, np.dtype(dtype).itemsize)
    array = np.memmap(path, dtype=dtype, mode="r", shape=(n, dim))
    rows = max(1, FEATURE_CHUNK_BYTES // (dim * 4))
    _copy_features(writer, (np.asarray(array[i:i + rows]) for i in range(0, n, rows)), dtype, (n, dim))


def _complete_custom(writer: CacheWriter, meta: dict[str, Any]) -> None:
    empty = np.empty(0, dtype=np.int64)
    if "train_idx" not in writer.entries:
        if "labels" in writer.entries:
            labels = np.fromfile(writer.path("labels"), dtype=np.int64)
            labelled = np.flatnonzero(labels >= 0)
            order = labelled[np.argsort(rng.hash_np(rng.stream_key(0, "split"), labelled), kind="stable")]
            a, b = int(0.8 * len(order)), int(0.1 * len(order))
            _write_splits(writer, order[:a], order[a:a + b], order[a + b:])
            meta["num_classes"] = int(labels.max()) + 1 if len(labelled) else 0
        else:
            _write_splits(writer, empty, empty, empty)
    meta.setdefault("feature_dim", writer.entries["features"]["shape"][1] if "features" in writer.entries else 0)
    meta.setdefault("feature_dtype", writer.entries["features"]["dtype"] if "features" in writer.entries else None)
