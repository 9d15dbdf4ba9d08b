"""One timing engine: no clock is read and no CUDA timing event made outside harness/timing.py.

Every timed number goes through the engine (``measure``, ``measure_collective``, ``Phases``,
``DeviceClock``), and every other clock reading (a time budget's deadline, a launcher's timeout, a
progress line, a build's seconds) through its one host clock ``harness.timing.now``, which a test
can replace (``injected_clock``). The check reads the code of harness/, impls/ and experiments/
(strings and comments left out: a docstring may name what it replaced) and fails on any clock or
event primitive elsewhere, by its name or through an alias of its module (``import time as t``,
``from time import time``, ``from torch.cuda import Event``), except the entries of ``ALLOWED``:
events that order work between streams and time nothing. Each entry must still match a line, so
the list cannot go stale.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "impls", "experiments")
ENGINE = "harness/timing.py"
PRIMITIVE = re.compile(r"\b(perf_counter(_ns)?|monotonic(_ns)?|process_time(_ns)?|time\.time(_ns)?|"
                       r"cuda\.Event|elapsed_time|get_elapsed_time)\b")
# what the time module reads a clock with, whatever name the module or the function goes by
TIME_CLOCKS = {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "process_time",
               "process_time_ns", "thread_time", "thread_time_ns", "time", "time_ns", "clock_gettime",
               "clock_gettime_ns"}
EVENT_MODULES = {"torch.cuda", "cupy.cuda"}
# a file that imports none of them needs no parse (most do not: the parse is the check's slow part)
IMPORTS_A_CLOCK = re.compile(r"\bimport\b[^\n]*\btime\b|\bfrom (time|torch\.cuda|cupy\.cuda) import\b")

# (file, code on the line): why it is not a measurement
ALLOWED = {
    # the prefetch thread's batch is ready for the training stream once this event is: ordering only
    ("impls/pipelines/base.py", "event = torch.cuda.Event()"): "stream ordering (prefetch)",
    # a pinned staging buffer is reused once the copy out of it (this event) is done: ordering only
    ("impls/pipelines/host.py", "event = torch.cuda.Event()"): "stream ordering (staging buffer reuse)",
    # a lane's token: work enqueued later on another lane waits for it (MG-GCN's staged SpMM)
    ("impls/fullbatch/staged.py", "event = self.cuda.Event()"): "stream ordering (staged SpMM lanes)",
}


def code_lines(text: str) -> dict[int, str]:
    """Each line's code, its strings and comments blanked out."""
    lines = text.splitlines()
    blank = [list(line) for line in lines]
    kinds = {tokenize.STRING, tokenize.COMMENT} | {getattr(tokenize, k) for k in ("FSTRING_MIDDLE",)
                                                   if hasattr(tokenize, k)}
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type not in kinds:
            continue
        (r0, c0), (r1, c1) = tok.start, tok.end
        for r in range(r0, r1 + 1):
            row = blank[r - 1]
            lo = c0 if r == r0 else 0
            hi = c1 if r == r1 else len(row)
            row[lo:hi] = " " * (hi - lo)
    return {i + 1: "".join(row) for i, row in enumerate(blank)}


def aliased_clock_lines(text: str) -> set[int]:
    """Lines that read a clock or make an event under another name than the regex knows: through an
    alias of the time module, a clock imported from it by name, or an Event imported from CUDA."""
    tree = ast.parse(text)
    time_names = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                  for alias in node.names if alias.name == "time"}
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(
                (node.module == "time" and alias.name in TIME_CLOCKS)
                or (node.module in EVENT_MODULES and alias.name == "Event") for alias in node.names):
            lines.add(node.lineno)
        elif (isinstance(node, ast.Attribute) and node.attr in TIME_CLOCKS
              and isinstance(node.value, ast.Name) and node.value.id in time_names):
            lines.add(node.lineno)
    return lines


def primitives(root: Path, allowed: dict = ALLOWED) -> tuple[list[str], list[tuple[str, str]]]:
    """(``file:line: code`` of every clock or timing-event primitive outside the engine and the
    allow-list, allow-list entries that match no line)."""
    found, used = [], set()
    for top in PACKAGES:
        for path in sorted((root / top).rglob("*.py")) if (root / top).is_dir() else ():
            rel = path.relative_to(root).as_posix()
            if rel == ENGINE:
                continue
            text = path.read_text()
            aliased = aliased_clock_lines(text) if IMPORTS_A_CLOCK.search(text) else set()
            for number, code in code_lines(text).items():
                if not PRIMITIVE.search(code) and number not in aliased:
                    continue
                hit = next(((f, c) for f, c in allowed if f == rel and c in code), None)
                if hit is None:
                    found.append(f"{rel}:{number}: {code.strip()}")
                else:
                    used.add(hit)
    return found, [entry for entry in allowed if entry not in used]


def test_no_timing_primitive_outside_the_engine():
    found, stale = primitives(ROOT)
    assert found == [], "read the clock through harness.timing (now, measure, Phases, DeviceClock):\n" + \
        "\n".join(found)
    assert stale == []


def test_the_check_finds_clocks_and_events_in_code_only_and_keeps_the_allow_list_honest(tmp_path):
    (tmp_path / "impls" / "x").mkdir(parents=True)
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "timing.py").write_text("import time\nnow = time.perf_counter\n")
    (tmp_path / "impls" / "x" / "mod.py").write_text(
        '"""Timed with perf_counter (a docstring may say so)."""\n'
        "import time\n"
        "# time.monotonic() in a comment is no reading\n"
        "start = time.perf_counter()\n"
        "deadline = time.monotonic() + 5\n"
        "stamp = time.time()\n"
        "e = torch.cuda.Event(enable_timing=True)\n"
        "ms = a.elapsed_time(b)\n"
        "ready = torch.cuda.Event()\n"
        "text = f'{1}: time.time()'\n"
        "ok = frame.is_monotonic_increasing\n")
    allowed = {("impls/x/mod.py", "ready = torch.cuda.Event()"): "ordering",
               ("impls/x/gone.py", "torch.cuda.Event()"): "a file that no longer has it"}
    found, stale = primitives(tmp_path, allowed)
    assert [f.split(":")[1] for f in found] == ["4", "5", "6", "7", "8"]
    assert stale == [("impls/x/gone.py", "torch.cuda.Event()")]
    assert primitives(tmp_path, {})[0][-1] == "impls/x/mod.py:9: ready = torch.cuda.Event()"


def test_a_clock_injected_into_an_experiment_fails_the_check_under_any_name(tmp_path):
    (tmp_path / "experiments" / "paper").mkdir(parents=True)
    (tmp_path / "experiments" / "paper" / "fig.py").write_text(
        "import time as clock\n"
        "from time import perf_counter\n"
        "from time import time as wall, sleep\n"
        "from torch.cuda import Event\n"
        "from cupy.cuda import Stream\n"
        "start = perf_counter()\n"
        "t = clock.time()\n"
        "clock.sleep(0.1)\n"
        "sleep(0.1)\n"
        "e = Event(enable_timing=True)\n")
    found, _ = primitives(tmp_path, {})
    assert [f.split(":")[1] for f in found] == ["2", "3", "4", "6", "7"]
    (tmp_path / "experiments" / "paper" / "fig.py").write_text(
        "from time import sleep\nimport time\ntime.sleep(0.1)\nsleep(0.1)\n")
    assert primitives(tmp_path, {})[0] == []
