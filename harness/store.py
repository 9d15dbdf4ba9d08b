"""Result store: numbered run directories with a manifest and rows appended as they finish.

``<root>/<NNNN>_<label>/manifest.json`` and ``rows.jsonl``. A directory is created
exclusively and never reused; rows are flushed and fsynced one by one so a crash
keeps everything measured before it; the manifest is rewritten atomically.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from .errors import HarnessError

ROW_KEYS = ("experiment", "impl", "params", "metric", "unit", "value", "stats",
            "world_size", "device", "status")
STATUSES = ("ok", "skipped", "error")
_RUN_DIR = re.compile(r"^(\d{4,})_")
_RESERVATION_NAME = ".reserving-{:04d}"
_RESERVATION = re.compile(r"^\.reserving-(\d{4,})$")


def _safe_label(label: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip("-.")
    return cleaned[:80] or "run"


def _json_default(obj):
    if hasattr(obj, "item"):  # numpy / torch scalars
        return obj.item()
    if isinstance(obj, (set, tuple)):
        return list(obj)
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def _clean_float(value):
    """NaN/inf become null at any depth, so rows stay strict JSON."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        return {k: _clean_float(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean_float(v) for v in value]
    return value


def validate_row(row: dict) -> None:
    missing = [k for k in ROW_KEYS if k not in row]
    if missing:
        raise ValueError(f"result row lacks keys {missing}")
    if row["status"] not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, got {row['status']!r}")
    if row["status"] != "ok" and not row.get("reason"):
        raise ValueError("a skipped or failed row needs a reason")
    if row["status"] == "ok" and row["value"] is None:
        raise ValueError("an ok row needs a value")


def _used_numbers(root: Path) -> set[int]:
    """Numbers taken by run directories or held by a reservation under ``root``."""
    used = set()
    for p in root.iterdir():
        m = _RUN_DIR.match(p.name) or _RESERVATION.match(p.name)
        if m:
            used.add(int(m.group(1)))
    return used


def _reserve_number(root: Path) -> int:
    """The next run number, held by this process alone until ``_release_number``.

    A run directory's name carries its label, so creating it exclusively does not stop two runs
    with different labels from taking one number. The reservation file does (O_EXCL), whatever
    the labels; the directories are scanned again once it is held, because a run that released
    the same number a moment ago has its directory in place by then.
    """
    while True:
        number = 1 + max(_used_numbers(root), default=0)
        try:
            fd = os.open(root / _RESERVATION_NAME.format(number), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            continue
        os.close(fd)
        if any(int(m.group(1)) == number for p in root.iterdir() if (m := _RUN_DIR.match(p.name))):
            _release_number(root, number)
            continue
        return number


def _release_number(root: Path, number: int) -> None:
    (root / _RESERVATION_NAME.format(number)).unlink(missing_ok=True)


def _owner() -> dict:
    """The process writing a run, so that a reader can tell a live run from an abandoned one."""
    import socket

    import psutil

    pid = os.getpid()
    return {"owner": {"pid": pid, "host": socket.gethostname(),
                      "started": psutil.Process(pid).create_time()}}


def run_status(manifest: dict) -> str:
    """The manifest's status, except that a run still marked "running" whose process is gone is
    "abandoned" (killed, or its machine went away): nothing will ever finish it. A run marked
    running on another host cannot be checked from here and stays "running"."""
    import socket

    import psutil

    status = manifest.get("status", "unknown")
    if status != "running":
        return status
    owner = manifest.get("owner")
    if manifest.get("imported_from") or not owner:   # a copy is never written again
        return "abandoned"
    if owner.get("host") != socket.gethostname():
        return "running"
    try:
        process = psutil.Process(owner["pid"])
        alive = (abs(process.create_time() - owner["started"]) < 1.0      # not a reused pid
                 and process.status() != psutil.STATUS_ZOMBIE)
    except (psutil.Error, KeyError, TypeError):
        alive = False
    return "running" if alive else "abandoned"


class RunStore:
    """Writer for one run directory."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.rows_path = self.path / "rows.jsonl"
        self.manifest_path = self.path / "manifest.json"

    @property
    def run_id(self) -> str:
        return self.path.name

    @classmethod
    def create(cls, root: Path, label: str, manifest: dict) -> "RunStore":
        root = Path(root)
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HarnessError(f"cannot use {root} as the result root: {exc.strerror or exc}") from None
        if not root.is_dir():
            raise HarnessError(f"cannot use {root} as the result root: not a directory")
        label = _safe_label(label)
        for _ in range(1000):
            number = _reserve_number(root)
            path = root / f"{number:04d}_{label}"
            try:
                path.mkdir()  # exclusive: never reuse a directory
            except FileExistsError:
                continue
            finally:
                _release_number(root, number)
            store = cls(path)
            store.write_manifest({**manifest, "run_id": path.name, "status": "running", **_owner()})
            store.rows_path.touch()
            return store
        raise HarnessError(f"could not create a new run directory under {root}")

    def write_manifest(self, manifest: dict) -> None:
        tmp = self.manifest_path.with_suffix(".json.tmp")
        with open(tmp, "w") as fh:
            json.dump(manifest, fh, indent=2, sort_keys=True, default=_json_default)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.manifest_path)

    def read_manifest(self) -> dict:
        with open(self.manifest_path) as fh:
            return json.load(fh)

    def update_manifest(self, **updates) -> None:
        manifest = self.read_manifest()
        manifest.update(updates)
        self.write_manifest(manifest)

    def replace_rows(self, rows: list[dict]) -> None:
        """Rewrite the rows file atomically (only while nobody else appends to it)."""
        lines = []
        for row in rows:
            row = {k: _clean_float(v) for k, v in row.items()}
            validate_row(row)
            lines.append(json.dumps(row, sort_keys=True, default=_json_default, allow_nan=False) + "\n")
        tmp = self.rows_path.with_suffix(".jsonl.tmp")
        with open(tmp, "w") as fh:
            fh.writelines(lines)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.rows_path)

    def append(self, row: dict) -> None:
        row = {k: _clean_float(v) for k, v in row.items()}
        validate_row(row)
        line = json.dumps(row, sort_keys=True, default=_json_default, allow_nan=False)
        with open(self.rows_path, "a") as fh:
            fh.write(line + "\n")
            fh.flush()
            os.fsync(fh.fileno())


WITHDRAWN = "withdrawn.json"


def withdraw_run(path: Path | str, reason: str) -> Path:
    """Mark a committed run as withdrawn (its rows were measured by code later found wrong): a
    ``withdrawn.json`` beside its rows, which stay as they were. ``report --all`` leaves the run
    out and lists it with the reason in the reports index."""
    run = load_run(path)
    reason = " ".join(str(reason).split())
    if not reason:
        raise HarnessError("say why the run is withdrawn (--reason)")
    marker = run.path / WITHDRAWN
    if marker.exists():
        raise HarnessError(f"{run.path.name} is already withdrawn: {withdrawn_reason(run.path)}")
    marker.write_text(json.dumps({"reason": reason, "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, indent=2) + "\n")
    return marker


def withdrawn_reason(path: Path | str) -> str | None:
    """Why the run directory at ``path`` was withdrawn, or None."""
    marker = Path(path) / WITHDRAWN
    if not marker.exists():
        return None
    try:
        return str(json.loads(marker.read_text()).get("reason") or "withdrawn")
    except json.JSONDecodeError:
        return "withdrawn (unreadable withdrawn.json)"


def import_run(src: Path | str, root: Path | str) -> "RunStore":
    """Copy a run directory made elsewhere (a GPU machine) under ``root`` with the next free
    number, so imported runs never overwrite local ones; the manifest records the origin."""
    run = load_run(src)
    manifest = dict(run.manifest)
    origin = manifest.get("run_id", Path(src).name)
    label = _RUN_DIR.sub("", Path(src).name) or "imported"
    store = RunStore.create(Path(root), label, {**manifest, "imported_from": origin})
    store.update_manifest(**{k: v for k, v in manifest.items() if k in ("status", "end", "counts")})
    for row in run.rows:
        store.append(row)
    return store


@dataclass
class StoredRun:
    path: Path
    manifest: dict
    rows: list[dict]

    @property
    def run_id(self) -> str:
        return self.manifest.get("run_id", self.path.name)


def load_run(path: Path | str) -> StoredRun:
    """Read a run directory; a torn last line (a crash mid-write) is dropped with a warning."""
    path = Path(path)
    if path.is_file() and path.name in ("rows.jsonl", "manifest.json"):
        path = path.parent
    manifest_path, rows_path = path / "manifest.json", path / "rows.jsonl"
    if not path.is_dir():
        raise HarnessError(f"no run directory at {path}")
    if not rows_path.exists():
        raise HarnessError(f"{path} is not a run directory (no rows.jsonl)")
    manifest = {}
    if manifest_path.exists():
        try:
            manifest = json.loads(manifest_path.read_text())
        except json.JSONDecodeError as exc:
            raise HarnessError(f"{manifest_path} is not valid JSON: {exc}") from None
    rows = []
    lines = rows_path.read_text().splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                warnings.warn(f"{rows_path}: dropped a torn last line (interrupted write)")
                continue
            raise HarnessError(f"{rows_path}:{number} is not valid JSON") from None
        if not isinstance(row, dict):
            raise HarnessError(f"{rows_path}:{number} is not a result row (not an object)")
        try:
            validate_row(row)
        except ValueError as exc:
            raise HarnessError(f"{rows_path}:{number} is not a result row: {exc}") from None
        rows.append(row)
    return StoredRun(path=path, manifest=manifest, rows=rows)
