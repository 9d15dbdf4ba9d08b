"""Result store: numbered run directories with a manifest and rows appended as they finish.

``<root>/<NNNN>_<label>/manifest.json`` and ``rows.jsonl``. A directory is created
exclusively and never reused (``--resume`` reopens one to append to it); rows are flushed and
fsynced one by one so a crash keeps everything measured before it, and a write that fails (a full
disk) is cut back off so no torn line is left; the manifest is rewritten atomically, and no
temporary file outlives a failed write. A write that fails is a :class:`StoreError`, one line.

Reading is forgiving: a damaged line (a torn write, a stray edit) or an unreadable manifest drops
only what is damaged, and says what (``StoredRun.problems``, and a warning).
"""

from __future__ import annotations

import json
import math
import os
import re
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from .errors import HarnessError, StoreError

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


def _write_all(path: Path, fd: int, data: bytes) -> None:
    """Every byte of ``data`` to ``fd`` (a file of ``path``), then fsync: the one place the store
    writes file contents (tests replace it to simulate a full disk)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)


def _store_error(path: Path, exc: OSError) -> StoreError:
    return StoreError(f"cannot write {path}: {exc.strerror or exc}")


def _write_atomically(path: Path, text: str) -> None:
    """``path`` replaced by ``text`` through a temporary file beside it, which a failed write
    removes."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_all(tmp, fd, text.encode())
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise _store_error(path, exc) from None


def _append_line(path: Path, line: str) -> None:
    """``line`` appended to ``path`` and fsynced; a write that fails is cut back off, so a full
    disk leaves the file as it was, not a torn last line."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise _store_error(path, exc) from None
    try:
        size = os.fstat(fd).st_size
        try:
            _write_all(path, fd, line.encode())
        except OSError as exc:
            try:
                os.ftruncate(fd, size)
            except OSError:
                pass
            raise _store_error(path, exc) from None
    finally:
        os.close(fd)


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


SPACE_RESERVE = ".space-reserve"
SPACE_RESERVE_BYTES = 256 * 1024


class RunStore:
    """Writer for one run directory. ``stamp``: fields every appended row gets (the commit the
    row was measured on); a store is picklable, so rank 0 of a launch appends through a copy."""

    def __init__(self, path: Path, stamp: dict | None = None):
        self.path = Path(path)
        self.rows_path = self.path / "rows.jsonl"
        self.manifest_path = self.path / "manifest.json"
        self.stamp = dict(stamp or {})

    @property
    def run_id(self) -> str:
        return self.path.name

    @classmethod
    def create(cls, root: Path, label: str, manifest: dict, stamp: dict | None = None) -> "RunStore":
        root = Path(root)
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HarnessError(f"cannot use {root} as the result root: {exc.strerror or exc}") from None
        if not root.is_dir():
            raise HarnessError(f"cannot use {root} as the result root: not a directory")
        label = _safe_label(label)
        for _ in range(1000):
            try:
                number = _reserve_number(root)
            except OSError as exc:      # a read-only folder, a full disk
                raise StoreError(f"cannot create a run directory under {root}: {exc.strerror or exc}") from None
            path = root / f"{number:04d}_{label}"
            try:
                path.mkdir()  # exclusive: never reuse a directory
            except FileExistsError:
                continue
            except OSError as exc:
                raise StoreError(f"cannot create a run directory under {root}: {exc.strerror or exc}") from None
            finally:
                _release_number(root, number)
            store = cls(path, stamp)
            try:
                store.write_manifest({**manifest, "run_id": path.name, "status": "running", **_owner()})
                store.rows_path.touch()
            except (StoreError, OSError) as exc:
                _remove_empty_run(path)
                raise StoreError(f"cannot create a run directory under {root}: "
                                 f"{getattr(exc, 'strerror', None) or exc}") from None
            return store
        raise HarnessError(f"could not create a new run directory under {root}")

    @classmethod
    def reopen(cls, path: Path, updates: dict, stamp: dict | None = None) -> "RunStore":
        """An existing run directory, marked running again by this process (``--resume``), its
        manifest updated with ``updates``; the rows stay and new ones are appended."""
        store = cls(path, stamp)
        store.update_manifest(**updates, status="running", **_owner())
        return store

    def write_manifest(self, manifest: dict) -> None:
        text = json.dumps(manifest, indent=2, sort_keys=True, default=_json_default) + "\n"
        _write_atomically(self.manifest_path, text)

    def read_manifest(self) -> dict:
        with open(self.manifest_path) as fh:
            return json.load(fh)

    def update_manifest(self, **updates) -> None:
        manifest = self.read_manifest()
        manifest.update(updates)
        self.write_manifest(manifest)

    def _line(self, row: dict) -> str:
        row = {k: _clean_float(v) for k, v in {**self.stamp, **row}.items()}
        validate_row(row)
        return json.dumps(row, sort_keys=True, default=_json_default, allow_nan=False) + "\n"

    def replace_rows(self, rows: list[dict]) -> None:
        """Rewrite the rows file atomically (only while nobody else appends to it)."""
        _write_atomically(self.rows_path, "".join(self._line(row) for row in rows))

    def append(self, row: dict) -> None:
        _append_line(self.rows_path, self._line(row))

    def reserve_space(self) -> None:
        """Hold a little disk space (a file allocated now), so that a run that fills the disk can
        release it and still record how it ended (its skipped rows, its final manifest)."""
        target = self.path / SPACE_RESERVE
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT, 0o644)
        except OSError:
            return
        try:
            os.posix_fallocate(fd, 0, SPACE_RESERVE_BYTES)
        except (OSError, AttributeError):
            try:
                os.write(fd, bytes(SPACE_RESERVE_BYTES))
            except OSError:
                pass
        finally:
            os.close(fd)

    def release_space(self) -> None:
        try:
            (self.path / SPACE_RESERVE).unlink(missing_ok=True)
        except OSError:
            pass


def _remove_empty_run(path: Path) -> None:
    for child in (path / "manifest.json", path / "manifest.json.tmp", path / "rows.jsonl"):
        try:
            child.unlink(missing_ok=True)
        except OSError:
            pass
    try:
        path.rmdir()
    except OSError:
        pass


WITHDRAWN = "withdrawn.json"


def withdraw_run(path: Path | str, reason: str, superseded_by: Path | str | None = None) -> Path:
    """Mark a committed run as withdrawn (its rows were measured by code later found wrong, or
    on a tree no commit holds, or it never finished): a ``withdrawn.json`` beside its rows, which
    stay as they were. ``superseded_by``: the complete run of committed code that now covers its
    points (named in the reason). ``report --all`` leaves the run out and lists it with the reason
    in the reports index."""
    run = load_run(path)
    reason = " ".join(str(reason).split())
    if not reason:
        raise HarnessError("say why the run is withdrawn (--reason)")
    marker = run.path / WITHDRAWN
    if marker.exists():
        raise HarnessError(f"{run.path.name} is already withdrawn: {withdrawn_reason(run.path)}")
    record = {"reason": reason, "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    if superseded_by is not None:
        newer = load_run(superseded_by)
        problem = reference_problem(newer)
        if problem:
            raise HarnessError(f"{newer.path.name} cannot supersede {run.path.name}: it is {problem}")
        record["superseded_by"] = newer.path.name
        record["reason"] = f"superseded by {newer.path.name}: {reason}"
    marker.write_text(json.dumps(record, indent=2) + "\n")
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


def git_of(manifest: dict) -> dict:
    """The tree a run was measured on: its commit(s) and whether any of its sittings ran on a
    tree with uncommitted changes (``dirty``: True, False, or None where nobody could tell)."""
    git = dict(manifest.get("git") or {})
    sittings = manifest.get("sittings") or []
    flags = [git.get("dirty")] + [(s.get("git") or {}).get("dirty") for s in sittings]
    git["dirty"] = True if any(f is True for f in flags) else (None if any(f is None for f in flags) else False)
    return git


def reference_problem(run: "StoredRun") -> str | None:
    """Why ``run`` cannot be a reference (promoted into results/, or shown by ``report --all``):
    not complete, or not measured on committed code, or damaged. None when it can."""
    status = run_status(run.manifest)
    counts = run.manifest.get("counts") or {}
    if status == "running":
        return "still running (its process is alive): promote it once it ends"
    if status == "abandoned":
        return ("abandoned: its manifest says running but its process is gone (killed?), so its rows may "
                "stop short; finish it with `harness run ... --resume RUN`")
    if status == "interrupted":
        return (f"interrupted ({counts.get('skipped', '?')} skipped rows, some for points it never reached); "
                "finish it with `harness run ... --resume RUN`")
    if status == "failed":
        return "failed (a launch of ranks or the run itself ended in an error)"
    if status != "complete":
        return f"not complete (status {status!r})"
    return provenance_problem(run)


def provenance_problem(run: "StoredRun") -> str | None:
    """Why no commit regenerates ``run``'s rows (or why they cannot be trusted whole), or None."""
    dirty = git_of(run.manifest).get("dirty")
    if dirty:
        return "measured on a tree with uncommitted changes (git.dirty): no commit regenerates it"
    if dirty is None:
        return "of unknown provenance: its manifest does not say whether its tree was clean (git.dirty)"
    if run.problems:
        return f"damaged: {run.problems[0]}"
    return None


RECORD_STATUSES = ("failed", "interrupted", "abandoned")


def import_run(src: Path | str, root: Path | str, keep_failed_as_record: bool = False) -> "RunStore":
    """Copy a run directory made elsewhere (a GPU machine) under ``root`` with the next free
    number, so imported runs never overwrite local ones; the manifest records the origin. Only a
    complete run of committed code becomes a reference; with ``keep_failed_as_record`` a failed,
    interrupted or abandoned one is kept as a record (``record`` in its manifest): listed by
    ``report --all``, in no table or headline."""
    run = load_run(src)
    problem = reference_problem(run)
    status = run_status(run.manifest)
    record = None
    if problem and keep_failed_as_record and status in RECORD_STATUSES and not provenance_problem(run):
        record = f"{status}, kept as a record (--keep-failed-as-record): {problem}"
    elif problem:
        if status in RECORD_STATUSES and provenance_problem(run):
            problem = f"{problem}, and {provenance_problem(run)}"
        hint = (" (--keep-failed-as-record keeps it as a record)"
                if status in RECORD_STATUSES and not provenance_problem(run) else "")
        raise HarnessError(f"not promoting {Path(src)}: it is {problem}{hint}")
    manifest = dict(run.manifest)
    origin = manifest.get("run_id", Path(src).name)
    label = _RUN_DIR.sub("", Path(src).name) or "imported"
    store = RunStore.create(Path(root), label, {**manifest, "imported_from": origin})
    kept = {k: v for k, v in manifest.items() if k in ("status", "end", "counts")}
    store.update_manifest(**kept, **({"record": record} if record else {}))
    store.replace_rows(run.rows)
    return store


def record_note(manifest: dict) -> str | None:
    """Why a run under results/ is kept as a record only (``promote --keep-failed-as-record``)."""
    return manifest.get("record")


@dataclass
class StoredRun:
    path: Path
    manifest: dict
    rows: list[dict]
    problems: list[str] = field(default_factory=list)   # what reading dropped (damaged lines, manifest)

    @property
    def run_id(self) -> str:
        return self.manifest.get("run_id", self.path.name)


def load_run(path: Path | str) -> StoredRun:
    """Read a run directory. A damaged line of rows.jsonl (a torn write, a stray edit) or an
    unreadable manifest drops only what is damaged: the good rows are kept and ``problems`` (and
    a warning) say what was dropped. A rows file without one good line is an error."""
    path = Path(path)
    if path.is_file() and path.name in ("rows.jsonl", "manifest.json"):
        path = path.parent
    manifest_path, rows_path = path / "manifest.json", path / "rows.jsonl"
    if not path.is_dir():
        raise HarnessError(f"no run directory at {path}")
    if not rows_path.exists():
        raise HarnessError(f"{path} is not a run directory (no rows.jsonl)")
    problems = []
    manifest = {}
    if manifest_path.exists():
        try:
            manifest = json.loads(manifest_path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            problems.append(f"manifest.json is not valid JSON ({exc}): read as empty")
        if not isinstance(manifest, dict):
            problems.append("manifest.json is not an object: read as empty")
            manifest = {}
    rows, dropped = [], []
    lines = rows_path.read_text(errors="replace").splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            dropped.append((number, "torn last line: an interrupted write" if number == len(lines)
                            else "not valid JSON"))
            continue
        if not isinstance(row, dict):
            dropped.append((number, "not a result row (not an object)"))
            continue
        try:
            validate_row(row)
        except ValueError as exc:
            dropped.append((number, f"not a result row: {exc}"))
            continue
        rows.append(row)
    if dropped and not rows:
        number, why = dropped[0]
        raise HarnessError(f"{rows_path}:{number} is {why}" if why.startswith("not") else f"{rows_path}:{number}: {why}")
    if dropped:
        listed = ", ".join(f"{n} ({why})" for n, why in dropped[:5]) + (f" and {len(dropped) - 5} more"
                                                                          if len(dropped) > 5 else "")
        problems.append(f"rows.jsonl: dropped line{'s' if len(dropped) > 1 else ''} {listed}; "
                        f"kept {len(rows)} good rows")
    for problem in problems:
        warnings.warn(f"{path}: {problem}", stacklevel=2)
    return StoredRun(path=path, manifest=manifest, rows=rows, problems=problems)
