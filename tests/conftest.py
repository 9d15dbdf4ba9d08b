"""Shared fixtures: fake experiments/implementations registered for one test, GPU skips."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:  # `tests.*` and the project packages, for spawned ranks too
    sys.path.insert(0, str(REPO_ROOT))


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@pytest.fixture(autouse=True)
def _skip_gpu_without_cuda(request):
    if request.node.get_closest_marker("gpu") and not _cuda_available():
        pytest.skip("needs a CUDA GPU (torch.cuda.is_available() is False)")


@pytest.fixture(autouse=True)
def _no_forced_device(monkeypatch):
    # HARNESS_DEVICE would change the default device of `harness run`
    monkeypatch.delenv("HARNESS_DEVICE", raising=False)


@pytest.fixture
def one_torch_thread():
    """One intra-op thread for the test: a benchmark's time then does not depend on free cores, and
    work on tiny tensors does not stall behind OpenMP threads spinning on a busy machine."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def registry_sandbox():
    """Register throwaway experiments / implementations; all are removed afterwards.

    ``sandbox.experiment(cls)`` registers an Experiment subclass (returns the instance);
    ``sandbox.impl(interface, name, needs=...)`` registers a factory.
    """
    from harness import registry

    registry.discover()
    exp_before = dict(registry._EXPERIMENTS)
    impl_before = dict(registry._IMPLS)

    class Sandbox:
        def experiment(self, cls):
            registry.register_experiment(cls)
            return registry._EXPERIMENTS[cls.id]

        def impl(self, interface, name, factory=None, **kw):
            factory = factory or (lambda *a, **k: None)
            return registry.register_impl(interface, name, **kw)(factory)

    yield Sandbox()
    for key in set(registry._EXPERIMENTS) - set(exp_before):
        del registry._EXPERIMENTS[key]
    for key in set(registry._IMPLS) - set(impl_before):
        del registry._IMPLS[key]
    assert registry._EXPERIMENTS == exp_before
    assert registry._IMPLS == impl_before


@pytest.fixture
def py_env():
    """Environment for `python -m harness` subprocesses run from the repository root."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("HARNESS_DEVICE", None)
    return env
