"""GPU tests: each module starts with :func:`require_gpus`, so it skips cleanly without CUDA."""

from __future__ import annotations


def require_gpus(count: int = 1, packages: tuple[str, ...] = ("cupy",)):
    """torch, or a module-level skip unless torch sees ``count`` CUDA GPUs and ``packages`` import."""
    import pytest

    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU (torch.cuda.is_available() is False)", allow_module_level=True)
    for package in packages:
        pytest.importorskip(package)
    if torch.cuda.device_count() < count:
        pytest.skip(f"needs {count} GPUs", allow_module_level=True)
    return torch
