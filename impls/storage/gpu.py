"""Storage's CUDA kernels (``kernels/*.cu``: the tiered stores' id translation and per-tier
counters), compiled and launched by :mod:`impls.core.cuda`."""

from __future__ import annotations

from pathlib import Path

from impls.core.cuda import KernelDir

KERNELS = KernelDir(Path(__file__).with_name("kernels"))
