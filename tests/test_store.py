"""Result store: round trip, numbered directories, crash safety, row validation."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
import warnings

import pytest

from harness.errors import HarnessError
from harness.store import ROW_KEYS, RunStore, load_run, validate_row

from .conftest import REPO_ROOT
from .helpers import row


def _strict_json(line: str):
    """json.loads that refuses NaN / Infinity, as strict JSON readers (jq, JS) do."""
    def bad(token):
        raise ValueError(f"non-standard JSON token {token}")
    return json.loads(line, parse_constant=bad)


def test_row_keys_are_the_design_contract():
    assert set(ROW_KEYS) == {"experiment", "impl", "params", "metric", "unit", "value", "stats",
                             "world_size", "device", "status"}


def test_round_trip_rows_and_manifest(tmp_path):
    manifest = {"command": "harness run x", "seed": 7, "nested": {"a": [1, 2]}}
    store = RunStore.create(tmp_path, "my label", manifest)
    rows = [row("local", 0.5, params={"size_gb": 8.0, "sizes": (1, 2)}),
            row("um", None, status="skipped", reason="needs CUDA"),
            row("p2p", None, status="error", reason="RuntimeError: boom")]
    for r in rows:
        store.append(r)
    store.update_manifest(end="later", status="complete")

    run = load_run(store.path)
    assert run.path == store.path
    assert run.run_id == store.run_id == store.path.name
    assert run.manifest["command"] == "harness run x"
    assert run.manifest["nested"] == {"a": [1, 2]}
    assert run.manifest["status"] == "complete" and run.manifest["end"] == "later"
    assert run.manifest["run_id"] == store.path.name
    assert len(run.rows) == 3
    want0 = dict(rows[0], params={"size_gb": 8.0, "sizes": [1, 2]})  # tuples come back as lists
    assert run.rows[0] == want0
    assert run.rows[1] == rows[1] and run.rows[2] == rows[2]
    # one strict JSON object per line, appended in order
    lines = store.rows_path.read_text().splitlines()
    assert [_strict_json(ln)["impl"] for ln in lines] == ["local", "um", "p2p"]
    # load_run also accepts the rows file itself
    assert load_run(store.rows_path).rows == run.rows


def test_numpy_scalars_are_stored_as_numbers(tmp_path):
    np = pytest.importorskip("numpy")
    store = RunStore.create(tmp_path, "np", {})
    store.append(row("local", np.float64(1.5), params={"n": np.int64(3)}, world_size=np.int32(2)))
    (back,) = load_run(store.path).rows
    assert back["value"] == 1.5 and back["params"]["n"] == 3 and back["world_size"] == 2


def test_new_store_starts_running_with_empty_rows(tmp_path):
    store = RunStore.create(tmp_path, "x", {"k": 1})
    assert store.read_manifest()["status"] == "running"
    assert store.rows_path.exists() and store.rows_path.read_text() == ""
    assert load_run(store.path).rows == []


def test_numbered_directories_are_never_reused(tmp_path):
    a = RunStore.create(tmp_path, "same", {})
    b = RunStore.create(tmp_path, "same", {})
    assert a.path.name == "0001_same" and b.path.name == "0002_same"
    c = RunStore.create(tmp_path, "other", {})
    assert c.path.name == "0003_other"
    assert a.read_manifest()["run_id"] == "0001_same"


def test_numbering_continues_after_the_highest_existing(tmp_path):
    (tmp_path / "0007_x").mkdir()
    (tmp_path / "notes").mkdir()          # not a run directory: ignored
    (tmp_path / "12_short").mkdir()       # fewer than 4 digits: not a run number
    store = RunStore.create(tmp_path, "x", {})
    assert store.path.name == "0008_x"


def test_existing_run_is_not_overwritten(tmp_path):
    first = RunStore.create(tmp_path, "keep", {"which": "first"})
    first.append(row("local", 1.0))
    RunStore.create(tmp_path, "keep", {"which": "second"})
    assert load_run(first.path).manifest["which"] == "first"
    assert len(load_run(first.path).rows) == 1


def test_label_is_sanitized(tmp_path):
    store = RunStore.create(tmp_path, "../../etc/pass wd;rm -rf", {})
    assert store.path.parent == tmp_path
    assert "/" not in store.path.name and " " not in store.path.name and ";" not in store.path.name
    assert RunStore.create(tmp_path, "///", {}).path.name.endswith("_run")


def test_torn_last_line_is_dropped_with_a_warning(tmp_path):
    store = RunStore.create(tmp_path, "torn", {})
    store.append(row("local", 1.0))
    store.append(row("local", 2.0))
    with open(store.rows_path, "a") as fh:
        fh.write('{"experiment": "wholegraph.table1", "impl": "lo')  # killed mid-write
    with pytest.warns(UserWarning, match="torn"):
        run = load_run(store.path)
    assert [r["value"] for r in run.rows] == [1.0, 2.0]


def test_complete_file_loads_without_warning(tmp_path):
    store = RunStore.create(tmp_path, "clean", {})
    store.append(row("local", 1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(load_run(store.path).rows) == 1


def test_a_torn_line_in_the_middle_drops_only_that_line_and_says_so(tmp_path):
    store = RunStore.create(tmp_path, "bad", {})
    store.append(row("local", 1.0))
    with open(store.rows_path, "a") as fh:
        fh.write('{"experiment": "wholegra\n')
        fh.write('{"experiment": "x"}\n')                        # valid JSON, not a result row
    store.append(row("local", 2.0))
    with pytest.warns(UserWarning, match=r"rows\.jsonl: dropped lines 2 \(not valid JSON\), 3 \(not a result row"):
        run = load_run(store.path)
    assert [r["value"] for r in run.rows] == [1.0, 2.0]
    assert run.problems == [run.problems[0]] and "kept 2 good rows" in run.problems[0]


def test_a_rows_file_without_one_good_line_is_an_error(tmp_path):
    store = RunStore.create(tmp_path, "junk", {})
    store.rows_path.write_text('{"experiment": "wholegra\n[1, 2]\n')
    with pytest.raises(HarnessError, match=r"rows\.jsonl:1 is not valid JSON"):
        load_run(store.path)


def test_blank_lines_are_ignored(tmp_path):
    store = RunStore.create(tmp_path, "blank", {})
    store.append(row("local", 1.0))
    with open(store.rows_path, "a") as fh:
        fh.write("\n\n")
    store.append(row("local", 2.0))
    assert [r["value"] for r in load_run(store.path).rows] == [1.0, 2.0]


def test_a_bad_manifest_is_read_as_empty_and_the_rows_are_kept(tmp_path):
    store = RunStore.create(tmp_path, "m", {})
    store.append(row("local", 1.0))
    store.manifest_path.write_text("{not json")
    with pytest.warns(UserWarning, match="manifest.json is not valid JSON"):
        run = load_run(store.path)
    assert run.manifest == {} and [r["value"] for r in run.rows] == [1.0]
    from harness.store import reference_problem

    assert reference_problem(run).startswith("not complete")        # never a reference


def test_missing_directory_and_missing_rows(tmp_path):
    with pytest.raises(HarnessError, match="no run directory"):
        load_run(tmp_path / "absent")
    with pytest.raises(HarnessError, match="no rows.jsonl"):
        load_run(tmp_path)


@pytest.mark.parametrize("key", ROW_KEYS)
def test_validate_row_rejects_a_missing_key(key):
    r = row("local", 1.0)
    del r[key]
    with pytest.raises(ValueError, match=key):
        validate_row(r)


def test_validate_row_rules():
    validate_row(row("local", 1.0))
    validate_row(row("um", None, status="skipped", reason="no GPU"))
    with pytest.raises(ValueError, match="ok row needs a value"):
        validate_row(row("local", None))
    with pytest.raises(ValueError, match="needs a reason"):
        validate_row(row("um", None, status="skipped"))
    with pytest.raises(ValueError, match="needs a reason"):
        validate_row(row("um", None, status="error", reason=""))
    with pytest.raises(ValueError, match="status"):
        validate_row(row("um", 1.0, status="fine"))


def test_append_validates_and_writes_nothing_for_a_bad_row(tmp_path):
    store = RunStore.create(tmp_path, "v", {})
    bad = row("local", 1.0)
    del bad["metric"]
    with pytest.raises(ValueError):
        store.append(bad)
    with pytest.raises(ValueError):
        store.append(row("local", None))
    assert store.rows_path.read_text() == ""


def test_nan_value_is_stored_as_null(tmp_path):
    store = RunStore.create(tmp_path, "nan", {})
    store.append(row("um", float("nan"), status="skipped", reason="refused", stats={}))
    store.append(row("um", float("inf"), status="error", reason="overflow", stats={}))
    lines = store.rows_path.read_text().splitlines()
    assert [_strict_json(ln)["value"] for ln in lines] == [None, None]


def test_nan_as_the_value_of_an_ok_row_is_rejected(tmp_path):
    """A NaN measurement is not a value: storing it as ok would hide a failed point."""
    store = RunStore.create(tmp_path, "nanok", {})
    with pytest.raises(ValueError, match="value"):
        store.append(row("local", float("nan"), stats={}))


def test_nested_nan_is_stored_as_strict_json(tmp_path):
    store = RunStore.create(tmp_path, "nested", {})
    r = row("local", 2.0, params={"ratio": float("nan")})
    r["stats"] = dict(r["stats"], std=float("nan"), max=float("inf"))
    store.append(r)
    (line,) = store.rows_path.read_text().splitlines()
    back = _strict_json(line)  # fails today: 'NaN' / 'Infinity' tokens
    assert back["params"]["ratio"] is None and back["stats"]["std"] is None


def test_manifest_is_replaced_atomically(tmp_path):
    store = RunStore.create(tmp_path, "atomic", {"a": 1})
    store.update_manifest(b=2)
    assert store.read_manifest()["a"] == 1 and store.read_manifest()["b"] == 2
    assert sorted(p.name for p in store.path.iterdir()) == ["manifest.json", "rows.jsonl"]


_KILLED_RUN = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {repo!r})
    from harness.store import RunStore
    from tests.helpers import row
    store = RunStore.create({root!r}, "killed", {{"command": "test"}})
    for i in range(3):
        store.append(row("local", float(i + 1)))
    print(store.path, flush=True)
    os._exit(1)      # killed before the runner could mark the run finished
    store.update_manifest(status="complete")
""")


def test_a_killed_run_keeps_its_rows_and_says_running(tmp_path):
    script = _KILLED_RUN.format(repo=str(REPO_ROOT), root=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    path = proc.stdout.strip()
    run = load_run(path)
    assert [r["value"] for r in run.rows] == [1.0, 2.0, 3.0]
    assert run.manifest["status"] == "running"
    assert "end" not in run.manifest
    assert not math.isnan(run.rows[0]["stats"]["median"])


def test_concurrent_creation_gives_distinct_directories(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=8) as pool:
        stores = list(pool.map(lambda i: RunStore.create(tmp_path, "race", {"i": i}), range(24)))
    names = sorted(s.path.name for s in stores)
    assert names == [f"{n:04d}_race" for n in range(1, 25)]
    # each directory holds the manifest of the store that created it
    assert sorted(s.read_manifest()["i"] for s in stores) == list(range(24))
    for s in stores:
        assert s.read_manifest()["run_id"] == s.path.name


def test_runs_started_at_once_in_processes_get_distinct_numbers_whatever_their_labels(tmp_path):
    """Separate processes (as separate `harness run` commands are) with different labels: the
    number is reserved for one run only, not just the directory name."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    from .store_targets import create_run_at_barrier

    workers = 6
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager, ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        for burst in range(3):
            barrier = manager.Barrier(workers)
            root = tmp_path / f"burst{burst}"
            names = list(pool.map(create_run_at_barrier, [str(root)] * workers,
                                  [f"label{i}" for i in range(workers)], [barrier] * workers))
            numbers = sorted(int(n.split("_")[0]) for n in names)
            assert numbers == list(range(1, workers + 1)), names
            assert sorted(p.name for p in root.iterdir()) == sorted(names)   # nothing else left behind


def test_git_state_prefers_the_commit_named_by_whoever_copied_the_tree(monkeypatch):
    """A copied tree may carry an older .git; the commit given in the environment wins, and the
    copier must also say whether the tree was clean: unsaid, or said otherwise than 0/1, is dirty."""
    from harness import envinfo

    monkeypatch.setenv("HARNESS_GIT_COMMIT", "abc1234")
    monkeypatch.setenv("HARNESS_GIT_DIRTY", "0")
    state = envinfo.git_state()
    assert state["commit"] == "abc1234" and state["dirty"] is False and "environment" in state["source"]
    monkeypatch.setenv("HARNESS_GIT_DIRTY", "1")
    assert envinfo.git_state()["dirty"] is True
    monkeypatch.setenv("HARNESS_GIT_DIRTY", "no")
    assert envinfo.git_state()["dirty"] is True and "dirty_unknown" in envinfo.git_state()
    monkeypatch.delenv("HARNESS_GIT_DIRTY")
    assert envinfo.git_state()["dirty"] is True       # unknown means dirty
    monkeypatch.delenv("HARNESS_GIT_COMMIT")
    assert envinfo.git_state().get("source") is None  # this checkout's own git


def test_git_state_of_a_checkout_counts_changed_and_untracked_files(tmp_path):
    """Untracked files travel with a copied tree and can change what runs: they make it dirty."""
    from harness import envinfo

    git = lambda *a: subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "c")
    assert envinfo.git_state(tmp_path)["dirty"] is False
    (tmp_path / "new_module.py").write_text("x = 1\n")
    state = envinfo.git_state(tmp_path)
    assert state["dirty"] is True and state["changes"] == ["new_module.py"]
    (tmp_path / ".gitignore").write_text("new_module.py\n.gitignore\n")
    assert envinfo.git_state(tmp_path)["dirty"] is False                      # ignored files do not count


# ------------------------------------------------------------------------------ failing writes

def _full_disk(monkeypatch, *, on: str = "rows.jsonl", after: int = 0):
    """Writes to files named ``on`` fail with ENOSPC after ``after`` succeeded, each failing one
    having written half its bytes (as a disk that fills mid-write does)."""
    import errno
    import os

    from harness import store as store_mod

    real = store_mod._write_all
    seen = {"n": 0}

    def write_all(path, fd, data):
        if path.name.startswith(on):
            seen["n"] += 1
            if seen["n"] > after:
                os.write(fd, data[: len(data) // 2])
                raise OSError(errno.ENOSPC, "No space left on device")
        real(path, fd, data)

    monkeypatch.setattr(store_mod, "_write_all", write_all)


def test_a_row_the_full_disk_refuses_leaves_no_torn_line(tmp_path, monkeypatch):
    from harness.errors import StoreError

    store = RunStore.create(tmp_path, "full", {})
    store.append(row("local", 1.0))
    _full_disk(monkeypatch)
    with pytest.raises(StoreError, match="cannot write .*rows.jsonl: No space left on device"):
        store.append(row("local", 2.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")                               # no torn line to drop
        assert [r["value"] for r in load_run(store.path).rows] == [1.0]


@pytest.mark.parametrize("on", ["manifest.json", "rows.jsonl"])
def test_an_atomic_rewrite_the_full_disk_refuses_leaves_the_file_and_no_tmp(tmp_path, monkeypatch, on):
    from harness.errors import StoreError

    store = RunStore.create(tmp_path, "full", {"a": 1})
    store.append(row("local", 1.0))
    _full_disk(monkeypatch, on=on)
    with pytest.raises(StoreError, match=f"cannot write .*{on}: No space left on device"):
        store.update_manifest(b=2) if on == "manifest.json" else store.replace_rows([row("local", 9.0)])
    assert sorted(p.name for p in store.path.iterdir()) == ["manifest.json", "rows.jsonl"]
    run = load_run(store.path)
    assert run.manifest["a"] == 1 and "b" not in run.manifest and [r["value"] for r in run.rows] == [1.0]


def test_a_run_directory_that_cannot_be_created_is_one_error_line(tmp_path, monkeypatch, capsys):
    """A read-only --out (EROFS simulated: the tests may run as root, whom permissions do not stop)."""
    import errno

    from harness import cli
    from harness import store as store_mod

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(store_mod, "_reserve_number", read_only)
    code = cli.main(["run", "wholegraph.table1", "--device", "cpu", "--quick", "--impl", "local",
                     "--param", "sizes_gb=8", "--out", str(tmp_path), "--no-report"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1] == f"error: cannot create a run directory under {tmp_path}: Read-only file system"
    assert list(tmp_path.iterdir()) == []


def test_a_read_only_out_folder_is_one_error_line(tmp_path, capsys):
    import os

    from harness import cli

    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders; the EROFS test above covers the path")
    out = tmp_path / "ro"
    out.mkdir()
    out.chmod(0o555)
    try:
        code = cli.main(["run", "wholegraph.table1", "--device", "cpu", "--quick", "--impl", "local",
                         "--param", "sizes_gb=8", "--out", str(out), "--no-report"])
    finally:
        out.chmod(0o755)
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "Permission denied" in err.strip().splitlines()[-1]
