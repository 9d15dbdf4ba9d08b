"""The documentation the code points to exists: every ``docs/<page>.md[#anchor]`` named in the code,
and every relative link of the README and docs/, resolves; nothing points at the design notes
outside the repository any more."""

from __future__ import annotations

import re
from pathlib import Path

from .conftest import REPO_ROOT

CODE = [p for top in ("harness", "impls", "experiments", "tests", ".ci")
        for p in (REPO_ROOT / top).rglob("*") if p.suffix in (".py", ".sh", ".cu", ".cuh") and p.is_file()]
PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a Markdown page's headings."""
    out = set()
    for line in page.read_text().splitlines():
        if m := re.match(r"#+\s+(.*)", line):
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            out.add(slug)
    return out


def broken(target: str, base: Path) -> str | None:
    path, _, anchor = target.partition("#")
    page = (base / path).resolve() if path else None
    if page is not None and not page.exists():
        return f"{target}: no such file"
    if anchor and page is not None and page.suffix == ".md" and anchor not in anchors(page):
        return f"{target}: no heading '{anchor}'"
    return None


def test_every_docs_page_the_code_names_exists():
    problems = []
    for path in CODE:
        if path.name == "test_docs.py":
            continue
        for target in re.findall(r"docs/[\w\-]+\.md(?:#[\w\-]+)?", path.read_text(errors="replace")):
            if problem := broken(target, REPO_ROOT):
                problems.append(f"{path.relative_to(REPO_ROOT)}: {problem}")
    assert not problems, problems


def test_links_of_the_readme_and_docs_resolve():
    problems = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"\w+://", target):
                continue
            if problem := broken(target, page.parent):
                problems.append(f"{page.relative_to(REPO_ROOT)}: {problem}")
    assert not problems, problems


def test_no_code_points_at_the_design_notes_outside_the_repository():
    hits = [str(p.relative_to(REPO_ROOT)) for p in CODE if p.name != "test_docs.py"
            and re.search(r"DESIGN(\.md)? (section|§)|DESIGN\.md", p.read_text(errors="replace"))]
    assert not hits, hits


def test_the_link_check_finds_a_broken_link(tmp_path):
    page = tmp_path / "a.md"
    page.write_text("# Title here\n")
    assert broken("a.md#title-here", tmp_path) is None
    assert broken("a.md#elsewhere", tmp_path) and broken("b.md", tmp_path)
