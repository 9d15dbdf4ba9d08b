"""The on-disk graph cache: raw arrays plus a JSON manifest, memory-mapped on load.

The cache is the harness's own folder, apart from the data root where a user's real datasets are
read (``--data-root``, else ``$HARNESS_DATA_ROOT``, else ``./data``), which the harness never
writes into (but for ``data fetch``, which downloads there when asked): ``$HARNESS_CACHE_DIR``,
else ``./data/harness_cache``. Layout::

    standin/<name>/scale-<s>_seed-<n>_g<generator version>-<params digest>/
    real/<name>/
        manifest.json
        indptr.bin      int64   [num_nodes + 1]
        indices.bin     int32   [num_edges]   (int64 when num_nodes >= 2**31)
        features.bin    float32 | float16 | bfloat16 (as uint16) [num_nodes, feature_dim], row-major
        labels.bin      int64   [num_nodes] (-1 = unlabelled) or [num_nodes, tasks] for multi-label
        train_idx.bin, val_idx.bin, test_idx.bin   int64, sorted

All files are little-endian with no header, so C++/CUDA code can ``mmap`` them directly.  A
manifest entry may instead name an external file (``path`` plus byte ``offset``), used for
multi-hundred-GB feature files we refuse to copy (MAG240M's ``node_feat.npy``).

The stand-in key is the scale, the seed and a digest of every generator parameter (including the
generator version), so changing the registry's stand-in settings or the generator builds a new
cache instead of reusing a stale one.

Integrity: the manifest records each file's size and two digests.  ``digest``, checked on every
load: BLAKE2b-128 over the size and 64 evenly spaced 64 KiB blocks (the whole file when smaller
than 4 MiB); it costs a few ms, always catches truncation and catches corruption in the sampled
blocks, not every flipped bit.  ``digest_full``: BLAKE2b-128 over the BLAKE2b-128 of every
16 MiB block (blocks hashed in parallel threads), checked by ``verify_cache(path, full=True)``
(``python -m harness data verify --full``).  A damaged cache is never used: loading warns,
deletes it and rebuilds.

Writes are atomic: a build fills a hidden sibling directory and renames it into place only after
the manifest is written; concurrent builders (ranks of one job) serialize on an ``fcntl`` lock.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
import uuid
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from ..errors import HarnessError
from ..timing import now
from .graph import Graph

CACHE_DIR = "harness_cache"
FORMAT = "harness-graph-cache"
FORMAT_VERSION = 1
DIGEST_BLOCKS = 64
DIGEST_BLOCK_BYTES = 64 * 1024
FULL_BLOCK_BYTES = 16 << 20
CHECKSUM_ALGORITHM = (f"digest: blake2b-128(size + {DIGEST_BLOCKS} x {DIGEST_BLOCK_BYTES} B sampled blocks); "
                      f"digest_full: blake2b-128(size + blake2b-128 of each {FULL_BLOCK_BYTES} B block)")
FILES = {"indptr": "indptr.bin", "indices": "indices.bin", "features": "features.bin",
         "labels": "labels.bin", "train_idx": "train_idx.bin", "val_idx": "val_idx.bin",
         "test_idx": "test_idx.bin"}
REQUIRED = ("indptr", "indices", "train_idx", "val_idx", "test_idx")
_STORAGE_DTYPE = {"bfloat16": np.uint16}


class CacheWarning(UserWarning):
    """A cache was damaged (truncated, corrupt, stale format) and is being rebuilt."""


def data_root(root: str | os.PathLike | None = None) -> Path:
    """Where real datasets are read: ``root``, else ``$HARNESS_DATA_ROOT``, else ``./data``."""
    if root is not None:
        return Path(root).expanduser()
    env = os.environ.get("HARNESS_DATA_ROOT")
    return Path(env).expanduser() if env else Path("data")


def cache_root() -> Path:
    """Where stand-ins and converted datasets are written: ``$HARNESS_CACHE_DIR``, else
    ``./data/harness_cache``; never a user's data root (module doc)."""
    env = os.environ.get("HARNESS_CACHE_DIR")
    return Path(env).expanduser() if env else Path("data") / CACHE_DIR


def scale_label(scale: float) -> str:
    return f"{scale:g}"


def standin_dir(root: str | os.PathLike | None, name: str, scale: float, seed: int,
                generator_version: int, digest: str) -> Path:
    """The cache folder of a stand-in (``root``, the data root, does not move it: :func:`cache_root`)."""
    key = f"scale-{scale_label(scale)}_seed-{seed}_g{generator_version}-{digest}"
    return cache_root() / "standin" / name / key


def real_dir(root: str | os.PathLike | None, name: str) -> Path:
    """The cache folder of a converted dataset (real, or a user's edge list)."""
    return cache_root() / "real" / name


# ---------------------------------------------------------------------------------------------
# checksums
# ---------------------------------------------------------------------------------------------

def file_digest(path: Path, offset: int = 0, length: int | None = None) -> str:
    """Sampled BLAKE2b-128 of ``length`` bytes of ``path`` starting at ``offset``."""
    size = path.stat().st_size - offset if length is None else length
    h = hashlib.blake2b(digest_size=16)
    h.update(int(size).to_bytes(8, "little"))
    with open(path, "rb") as f:
        if size <= DIGEST_BLOCKS * DIGEST_BLOCK_BYTES:
            f.seek(offset)
            remaining = size
            while remaining > 0:
                chunk = f.read(min(remaining, 1 << 24))
                if not chunk:
                    break
                h.update(chunk)
                remaining -= len(chunk)
        else:
            starts = np.linspace(0, size - DIGEST_BLOCK_BYTES, DIGEST_BLOCKS).astype(np.int64)
            for start in starts.tolist():
                f.seek(offset + start)
                h.update(f.read(DIGEST_BLOCK_BYTES))
    return h.hexdigest()


def full_digest(path: Path, offset: int = 0, length: int | None = None) -> str:
    """BLAKE2b-128 of every byte: the size, then the digest of each block in order (blocks are
    hashed by parallel threads: hashlib releases the GIL, so a many-GB file takes seconds)."""
    from concurrent.futures import ThreadPoolExecutor

    size = path.stat().st_size - offset if length is None else length
    fd = os.open(path, os.O_RDONLY)
    try:
        def block(start: int) -> bytes:
            data = os.pread(fd, min(FULL_BLOCK_BYTES, size - start), offset + start)
            return hashlib.blake2b(data, digest_size=16).digest()

        with ThreadPoolExecutor(max(1, min(8, os.cpu_count() or 1))) as pool:
            parts = list(pool.map(block, range(0, size, FULL_BLOCK_BYTES)))
    finally:
        os.close(fd)
    h = hashlib.blake2b(digest_size=16)
    h.update(int(size).to_bytes(8, "little"))
    for part in parts:
        h.update(part)
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------------

class CacheWriter:
    """Fills a hidden temporary directory; :meth:`commit` renames it to ``final`` atomically."""

    def __init__(self, final: Path):
        self.final = Path(final)
        self.final.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = self.final.parent / f".{self.final.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.tmp.mkdir()
        self.entries: dict[str, dict[str, Any]] = {}

    def path(self, field: str) -> Path:
        return self.tmp / FILES.get(field, f"{field}.bin")

    def add_array(self, field: str, array: np.ndarray, dtype: str | None = None) -> None:
        """Write ``array`` as the file of ``field`` (``dtype``: logical dtype, e.g. bfloat16)."""
        array = np.ascontiguousarray(array)
        with open(self.path(field), "wb") as f:
            array.tofile(f)
        self.register(field, dtype or str(array.dtype), array.shape)

    def register(self, field: str, dtype: str, shape: tuple[int, ...]) -> None:
        """Record a file already written to :meth:`path`."""
        self.entries[field] = {"file": self.path(field).name, "dtype": dtype,
                               "shape": [int(s) for s in shape]}

    def register_external(self, field: str, path: Path, dtype: str, shape: tuple[int, ...],
                          offset: int = 0) -> None:
        self.entries[field] = {"path": str(Path(path).resolve()), "offset": int(offset),
                               "dtype": dtype, "shape": [int(s) for s in shape]}

    def commit(self, meta: dict[str, Any]) -> Path:
        for field in REQUIRED:
            if field not in self.entries:
                raise ValueError(f"cache is missing {field}")
        for field, entry in self.entries.items():
            path, offset = _entry_path(self.tmp, entry)
            length = _entry_bytes(entry)
            actual = path.stat().st_size - offset
            if actual < length:
                raise ValueError(f"{field}: wrote {actual} bytes, expected {length}")
            entry["bytes"] = length
            entry["digest"] = file_digest(path, offset, length)
            entry["digest_full"] = full_digest(path, offset, length)
        manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, **meta,
                    "files": self.entries, "checksum": CHECKSUM_ALGORITHM,
                    "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        with open(self.tmp / "manifest.json", "w") as f:
            json.dump(manifest, f, indent=1, default=_json_default)
            f.flush()
            os.fsync(f.fileno())
        if self.final.exists():
            _remove(self.final)
        os.rename(self.tmp, self.final)
        return self.final

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def _json_default(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serializable: {type(value)}")


def _remove(directory: Path) -> None:
    """Move aside then delete, so a reader never sees a half-deleted cache."""
    doomed = directory.parent / f".{directory.name}.old-{uuid.uuid4().hex[:8]}"
    os.rename(directory, doomed)
    shutil.rmtree(doomed, ignore_errors=True)


def _entry_path(directory: Path, entry: dict[str, Any]) -> tuple[Path, int]:
    if "path" in entry:
        return Path(entry["path"]), int(entry.get("offset", 0))
    return directory / entry["file"], 0


def _storage_dtype(dtype: str) -> np.dtype:
    return np.dtype(_STORAGE_DTYPE.get(dtype, dtype))


def _entry_bytes(entry: dict[str, Any]) -> int:
    return int(np.prod(entry["shape"], dtype=np.int64)) * _storage_dtype(entry["dtype"]).itemsize


# ---------------------------------------------------------------------------------------------
# reading and verifying
# ---------------------------------------------------------------------------------------------

def read_manifest(directory: Path) -> dict[str, Any]:
    with open(Path(directory) / "manifest.json") as f:
        return json.load(f)


def verify_cache(directory: Path, full: bool = False) -> tuple[bool, str]:
    """(usable, reason): format, every file's size and digest, and the CSR's end points."""
    directory = Path(directory)
    try:
        manifest = read_manifest(directory)
    except FileNotFoundError:
        return False, "no manifest.json"
    except (OSError, ValueError) as exc:
        return False, f"unreadable manifest ({exc})"
    if manifest.get("format") != FORMAT or manifest.get("format_version") != FORMAT_VERSION:
        return False, "unknown cache format version"
    files = manifest.get("files", {})
    for field in REQUIRED:
        if field not in files:
            return False, f"manifest lists no {field}"
    for field, entry in files.items():
        path, offset = _entry_path(directory, entry)
        if not path.exists():
            return False, f"{field}: {path} is missing"
        size = path.stat().st_size - offset
        if size != entry["bytes"] or size != _entry_bytes(entry):
            return False, f"{field}: {size} bytes on disk, manifest says {entry['bytes']} (truncated?)"
        if full and "digest_full" not in entry:
            return False, f"{field}: the manifest has no whole-file checksum (rebuild the cache to record one)"
        digest = full_digest(path, offset, size) if full else file_digest(path, offset, size)
        if digest != entry["digest_full" if full else "digest"]:
            return False, f"{field}: checksum mismatch (corrupt)"
    indptr = _memmap(directory, files["indptr"])
    if len(indptr) != manifest["num_nodes"] + 1 or indptr[0] != 0 or indptr[-1] != manifest["num_edges"]:
        return False, "indptr does not match the node and edge counts"
    return True, ""


def _memmap(directory: Path, entry: dict[str, Any]) -> np.ndarray:
    path, offset = _entry_path(directory, entry)
    shape = tuple(entry["shape"])
    dtype = _storage_dtype(entry["dtype"])
    if int(np.prod(shape, dtype=np.int64)) == 0:
        return np.zeros(shape, dtype=dtype)
    # Copy-on-write: zero-copy reads, and torch.from_numpy gets a writable array.
    return np.memmap(path, dtype=dtype, mode="c", offset=offset, shape=shape)


def open_graph(directory: Path, verify: bool = True) -> Graph:
    """Memory-map a cached graph (verifying it first unless told not to)."""
    directory = Path(directory)
    if verify:
        ok, reason = verify_cache(directory)
        if not ok:
            raise HarnessError(f"cache {directory} is damaged: {reason}")
    manifest = read_manifest(directory)
    files = manifest["files"]
    arrays = {field: _memmap(directory, entry) for field, entry in files.items()}
    meta = {k: v for k, v in manifest.items() if k != "files"}
    return Graph(
        name=manifest["name"], num_nodes=int(manifest["num_nodes"]),
        num_edges=int(manifest["num_edges"]), indptr=arrays["indptr"], indices=arrays["indices"],
        features=arrays.get("features"), labels=arrays.get("labels"),
        train_idx=arrays["train_idx"], val_idx=arrays["val_idx"], test_idx=arrays["test_idx"],
        is_standin=bool(manifest.get("is_standin", False)), scale=float(manifest.get("scale", 1.0)),
        meta=meta, path=directory)


@contextlib.contextmanager
def build_lock(directory: Path) -> Iterator[None]:
    """Serialize builders of one cache directory (other ranks wait, then reuse the result)."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    lock_path = directory.parent / f".{directory.name}.lock"
    with open(lock_path, "a+") as handle:
        try:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - non-POSIX: no cross-process lock
            pass
        try:
            yield
        finally:
            with contextlib.suppress(Exception):
                import fcntl

                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _clean_stale(parent: Path, name: str) -> None:
    """Remove temp dirs left by builders that died (their pid is gone)."""
    for tmp in parent.glob(f".{name}.tmp-*"):
        try:
            pid = int(tmp.name.split(".tmp-")[1].split("-")[0])
        except (IndexError, ValueError):
            continue
        if pid == os.getpid() or not _pid_alive(pid):
            shutil.rmtree(tmp, ignore_errors=True)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def get_or_build(directory: Path, build: Callable[[CacheWriter], dict[str, Any]],
                 rebuild: bool = False) -> Path:
    """A verified cache at ``directory``, built by ``build(writer) -> meta`` when absent or damaged."""
    directory = Path(directory)
    if not rebuild and directory.exists() and verify_cache(directory)[0]:
        return directory
    with build_lock(directory):
        if directory.exists():
            ok, reason = verify_cache(directory)
            if ok and not rebuild:
                return directory
            if not ok:
                warnings.warn(f"dataset cache {directory} is damaged ({reason}); rebuilding it",
                              CacheWarning, stacklevel=3)
            _remove(directory)
        _clean_stale(directory.parent, directory.name)
        writer = CacheWriter(directory)
        try:
            started = now()
            meta = build(writer)
            meta["build_seconds"] = round(now() - started, 3)
            writer.commit(meta)
        except BaseException:
            writer.abort()
            raise
    return directory


# ---------------------------------------------------------------------------------------------
# what is present locally
# ---------------------------------------------------------------------------------------------

def local_entries(name: str, root: str | os.PathLike | None = None,
                  verify: bool = False) -> list[dict[str, Any]]:
    """Cached copies of ``name``: kind (real/standin), scale, seed, path, and validity."""
    base = cache_root()
    found = []
    candidates = [("real", base / "real" / name)]
    standins = base / "standin" / name
    if standins.is_dir():
        candidates += [("standin", d) for d in sorted(standins.iterdir())
                       if d.is_dir() and not d.name.startswith(".")]
    for kind, directory in candidates:
        if not (directory / "manifest.json").exists():
            continue
        try:
            manifest = read_manifest(directory)
        except (OSError, ValueError):
            found.append({"kind": kind, "path": directory, "valid": False, "reason": "bad manifest"})
            continue
        entry = {"kind": kind, "path": directory, "scale": manifest.get("scale", 1.0),
                 "seed": manifest.get("seed"), "num_nodes": manifest.get("num_nodes"),
                 "num_edges": manifest.get("num_edges"), "valid": True, "reason": ""}
        if verify:
            entry["valid"], entry["reason"] = verify_cache(directory)
        found.append(entry)
    return found


def find_full_scale(name: str, root: str | os.PathLike | None = None) -> tuple[Path, str] | None:
    """A valid full-size copy: the real dataset if cached, else a scale-1.0 stand-in."""
    entries = local_entries(name, root)
    real = [e for e in entries if e["kind"] == "real"]
    full = sorted((e for e in entries if e["kind"] == "standin" and float(e["scale"]) == 1.0),
                  key=lambda e: (e["seed"] != 0, e["seed"]))
    for entry in real + full:
        if verify_cache(entry["path"])[0]:
            origin = "real" if entry["kind"] == "real" else f"stand-in scale 1 seed {entry['seed']}"
            return entry["path"], origin
    return None
