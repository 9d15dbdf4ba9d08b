"""The GPU-runner workflow only runs commands that exist in this repository."""

from __future__ import annotations

import shlex
import tomllib
from pathlib import Path

import pytest

from harness import registry
from harness.cli import build_parser

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / ".github" / "workflows" / "gpu.yml"
yaml = pytest.importorskip("yaml")


def _run_steps():
    doc = yaml.safe_load(WORKFLOW.read_text())
    jobs = doc["jobs"]
    assert jobs, "the workflow defines no job"
    for job in jobs.values():
        assert "gpu" in job["runs-on"], "the job must run on a self-hosted GPU runner"
        for step in job["steps"]:
            if "run" in step:
                for line in step["run"].strip().splitlines():
                    yield step.get("name", ""), shlex.split(line)


def test_workflow_parses_and_names_a_gpu_runner():
    steps = list(_run_steps())
    assert any(argv[:3] == ["python", "-m", "harness"] and argv[3] == "compare" for _, argv in steps)
    assert any("pytest" in argv for _, argv in steps)


@pytest.mark.parametrize("name,argv", list(_run_steps()), ids=lambda x: x if isinstance(x, str) else None)
def test_every_workflow_command_exists(name, argv):
    assert argv[0] == "python" and argv[1] == "-m", f"{name}: unexpected command {argv}"
    module, args = argv[2], argv[3:]
    if module == "harness":
        parsed = build_parser().parse_args(args)          # raises on an unknown subcommand/option
        if parsed.command == "run":
            assert registry.resolve(parsed.ids)            # every experiment id exists
    elif module == "pytest":
        paths = [a for a in args if not a.startswith("-") and (REPO / a).exists()]
        assert paths, f"{name}: pytest is given no existing path"
        if "-m" in args:
            marker = args[args.index("-m") + 1]
            config = tomllib.loads((REPO / "pyproject.toml").read_text())
            markers = config["tool"]["pytest"]["ini_options"]["markers"]
            assert any(m.startswith(marker + ":") for m in markers), f"unknown marker {marker}"
    elif module == "pip":
        extras = args[-1].split("[", 1)[1].rstrip("]").split(",") if "[" in args[-1] else []
        declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
        assert all(e in declared for e in extras), f"undeclared extras in {args[-1]}"
    else:
        pytest.fail(f"{name}: unknown module {module}")
