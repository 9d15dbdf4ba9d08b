"""The import graph of the code (every import statement, in functions too, read with ast):

- ``impls/core`` imports no interface of ``impls/``;
- an interface imports another only through that interface's package API (``from impls.storage
  import ShardedTable``), never its modules (``impls.storage.shards``), and the interfaces'
  dependencies form no circle;
- no module of harness/, impls/ or experiments/ reaches itself through imports.

Each check is also run on a small tree that breaks it, so a check that cannot fail would show.
"""

from __future__ import annotations

import ast
import collections
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "impls", "experiments")


def modules(root: Path) -> dict[str, Path]:
    out = {}
    for top in PACKAGES:
        for path in (root / top).rglob("*.py") if (root / top).is_dir() else ():
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def imports(mod: str, path: Path) -> list[tuple[str, str | None]]:
    """(module, name) of every import of ``mod`` (name: what ``from module import name`` takes)."""
    package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                full = ".".join(base + ([node.module] if node.module else []))
            else:
                full = node.module or ""
            out += [(full, alias.name) for alias in node.names]
    return out


def interface_of(mod: str) -> str | None:
    parts = mod.split(".")
    return parts[1] if parts[0] == "impls" and len(parts) > 1 else None


def interface_problems(root: Path) -> list[str]:
    """Imports that reach into another interface's modules, or from core into an interface, and
    circles between interfaces."""
    mods = modules(root)
    problems, depends = [], collections.defaultdict(set)
    for mod, path in mods.items():
        mine = interface_of(mod)
        if mine is None:
            continue
        for target, name in imports(mod, path):
            theirs = interface_of(target)
            if theirs is None or theirs == mine:
                continue
            if mine == "core":
                problems.append(f"{mod} imports {target}: impls.core imports no interface")
                continue
            if theirs == "core":
                continue
            if target != f"impls.{theirs}" or (name and f"impls.{theirs}.{name}" in mods):
                what = f"{target}.{name}" if name and target == f"impls.{theirs}" else target
                problems.append(f"{mod} imports {what}: another interface's internals "
                                f"(use impls.{theirs}'s package API)")
            depends[mine].add(theirs)
    problems += [f"interfaces import each other in a circle: {' -> '.join(c)}" for c in circles(depends)]
    return problems


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(set(edges) | {w for ws in edges.values() for w in ws}):
        if v not in index:
            visit(v)
    return found


def module_circles(root: Path) -> list[list[str]]:
    """Modules that reach themselves through imports (in functions too)."""
    mods = modules(root)

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rsplit(".", 1)[0] if "." in name else ""
        return name or None

    edges = collections.defaultdict(set)
    for mod, path in mods.items():
        for target, name in imports(mod, path):
            hit = resolve(f"{target}.{name}") if name else None
            hit = hit or resolve(target)
            if hit and hit != mod:
                edges[mod].add(hit)
    return circles(edges)


def test_interfaces_import_core_or_each_others_package_api_only():
    assert interface_problems(ROOT) == []


def test_no_module_reaches_itself_through_imports():
    assert module_circles(ROOT) == []


@pytest.fixture
def tree(tmp_path):
    def write(files: dict[str, str]) -> Path:
        for rel, text in files.items():
            path = tmp_path / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return tmp_path
    return write


CLEAN = {"impls/__init__.py": "", "impls/core/__init__.py": "", "impls/core/layout.py": "X = 1\n",
         "impls/storage/__init__.py": "from .shards import Table\n",
         "impls/storage/shards.py": "from impls.core.layout import X\nTable = X\n",
         "impls/gather/__init__.py": "", "impls/gather/p2p.py": "from impls.storage import Table\n"}


def test_the_checks_pass_a_clean_tree(tree):
    root = tree(CLEAN)
    assert interface_problems(root) == [] and module_circles(root) == []


@pytest.mark.parametrize("path, text, problem", [
    ("impls/gather/p2p.py", "def f():\n    from impls.storage.shards import Table\n", "another interface's internals"),
    ("impls/gather/p2p.py", "from impls.storage import shards\n", "impls.storage.shards: another interface"),
    ("impls/core/layout.py", "def f():\n    import impls.gather.p2p\n", "impls.core imports no interface"),
    ("impls/storage/shards.py", "from impls.gather import p2p\nTable = 1\n", "another interface's internals"),
    ("impls/storage/shards.py", "def f():\n    from impls.gather import thing\nTable = 1\n", "in a circle"),
])
def test_the_interface_check_finds_what_breaks_it(tree, path, text, problem):
    root = tree({**CLEAN, path: text})
    assert any(problem in p for p in interface_problems(root)), interface_problems(root)


def test_the_circle_check_finds_a_circle_through_a_function(tree):
    root = tree({**CLEAN, "harness/__init__.py": "", "harness/a.py": "from . import b\n",
                 "harness/b.py": "def f():\n    from harness import a\n"})
    assert module_circles(root) == [["harness.a", "harness.b"]]
