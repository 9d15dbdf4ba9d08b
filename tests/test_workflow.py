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


def test_the_gpu_gate_measures_base_and_candidate_on_this_runner_at_10_percent():
    """The GPU gate is bench check on the GPU hot paths (base and candidate interleaved in this job),
    not a comparison with a run stored from another machine."""
    from harness import bench

    (checkout,) = [s for s in _steps() if s.get("uses", "").startswith("actions/checkout")]
    assert checkout["with"]["fetch-depth"] == 0                   # the merge base must be reachable
    gates = [argv for _, argv in _commands() if argv[2:5] == ["harness", "bench", "check"]]
    assert len(gates) == 1
    args = build_parser().parse_args(gates[0][3:])
    assert args.device == "cuda" and args.base is None and args.base_tree is None
    threshold = args.threshold or bench.GATES[args.device][1]
    assert threshold <= 1.10 and (args.rounds or bench.DEFAULT_ROUNDS) >= 5
    assert "--allow-mismatch" not in " ".join(line for _, line in _run_lines())
    names = [s.get("name", "") for s in _steps()]
    gpu_tests = next(i for i, s in enumerate(_steps()) if "-m gpu" in s.get("run", ""))
    gate = next(i for i, n in enumerate(names) if n.startswith("GPU regression check"))
    assert gpu_tests < gate                                        # correct first, then fast


def test_the_gpu_gate_covers_the_gpu_hot_paths():
    """Each hot path has a gpu-marked benchmark, which is what `bench check --device cuda` selects."""
    import ast

    suite = REPO / "tests" / "benchmarks"
    gpu = {}
    for path in suite.glob("test_*.py"):
        tree = ast.parse(path.read_text())
        marked = any(isinstance(n, ast.Assign) and ast.unparse(n).startswith("pytestmark = pytest.mark.gpu")
                     for n in tree.body)
        if marked:
            gpu |= {n.name: ast.unparse(n) for n in tree.body if isinstance(n, ast.FunctionDef)
                    and n.name.startswith("test_")}
    calls = {name: body for name, body in gpu.items()}
    assert any("row_gather.gather_into" in b for b in calls.values())               # the one-kernel gather
    assert any("'sampling'" in b or '"sampling"' in b for b in calls.values())      # a sampler
    assert any("append_unique" in b for b in calls.values())
    # a training step (the full_batch_epoch fixture of tests/benchmarks/conftest.py trains one)
    assert any("train_epoch" in b or "full_batch_epoch" in b for b in calls.values())


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
