"""The GPU-runner workflow: who may trigger it, where it runs, what it installs, and that it only
runs commands that exist in this repository."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from harness import registry
from harness.cli import build_parser

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / ".github" / "workflows" / "gpu.yml"
ACTIONLINT_CONFIG = REPO / ".github" / "actionlint.yaml"
yaml = pytest.importorskip("yaml")
GITHUB_LABELS = {"self-hosted", "linux", "x64", "arm64"}


def _doc() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def _job() -> dict:
    (job,) = _doc()["jobs"].values()
    return job


def _steps() -> list[dict]:
    return _job()["steps"]


def _run_lines():
    for step in _steps():
        for line in step.get("run", "").strip().splitlines():
            yield step.get("name", ""), line.strip()


def _commands():
    """``python -m MODULE ...`` lines, split as the shell would."""
    for name, line in _run_lines():
        if line.startswith("python -m "):
            yield name, shlex.split(line)


def test_pull_requests_run_only_when_a_maintainer_adds_the_label():
    doc = _doc()
    triggers = doc.get("on", doc.get(True))             # YAML 1.1 reads a bare `on` as true
    assert triggers["pull_request"] == {"types": ["labeled"]}   # not opened/synchronize: no label, no run
    assert "pull_request_target" not in triggers
    condition = _job()["if"]
    assert "github.event.label.name == 'run-gpu'" in condition
    assert "github.event_name != 'pull_request'" in condition


def test_the_job_runs_on_self_hosted_gpu_runners_that_actionlint_knows():
    labels = _job()["runs-on"]
    assert "self-hosted" in labels and "gpu" in labels
    config = yaml.safe_load(ACTIONLINT_CONFIG.read_text())
    assert set(labels) - GITHUB_LABELS <= set(config["self-hosted-runner"]["labels"])


def test_everything_installs_into_a_fresh_venv_with_a_pinned_torch():
    steps = _steps()
    venv = next(i for i, s in enumerate(steps) if "python3 -m venv" in s.get("run", ""))
    assert "GITHUB_PATH" in steps[venv]["run"]
    installs = [i for i, s in enumerate(steps) if "pip install" in s.get("run", "") or ".ci/run" in s.get("run", "")]
    assert installs and min(installs) > venv, "something installs before the virtual environment exists"
    env = _job()["env"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", env["TORCH_VERSION"])
    torch_line = next(line for _, line in _run_lines() if '"torch==$TORCH_VERSION"' in line)
    assert "--index-url" in torch_line and env["TORCH_INDEX"].startswith("https://download.pytorch.org/whl/cu")


def test_the_job_runs_ci_the_gpu_tests_and_the_reference_compare():
    lines = [line for _, line in _run_lines()]
    assert ".ci/run" in lines and (REPO / ".ci" / "run").stat().st_mode & 0o111
    ci = next(s for s in _steps() if s.get("run", "").strip() == ".ci/run")
    assert ci["env"]["PYTEST_ADDOPTS"] == '-m "not gpu"'           # the GPU tests run once, in their step
    commands = [argv for _, argv in _commands()]
    assert any(argv[2:5] == ["pytest", "-q", "-m"] and "gpu" in argv for argv in commands)
    assert any(argv[2:5] == ["harness", "compare", "--reference"] for argv in commands)


@pytest.mark.parametrize("name,argv", list(_commands()), ids=lambda x: x if isinstance(x, str) else None)
def test_every_workflow_command_exists(name, argv):
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
        extras = args[-1].split("[", 1)[1].rstrip("]\"").split(",") if "[" in args[-1] else []
        declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
        assert all(e in declared for e in extras), f"undeclared extras in {args[-1]}"
    else:
        pytest.fail(f"{name}: unknown module {module}")


def test_actionlint_finds_nothing():
    actionlint = shutil.which("actionlint")
    if actionlint is None:
        pytest.skip("actionlint is not installed")
    proc = subprocess.run([actionlint, "-config-file", str(ACTIONLINT_CONFIG), str(WORKFLOW)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
