"""NVML (pynvml / nvidia-ml-py) for a CUDA device: the utilization monitor of the training
pipelines and the NVLink counters of the gathers read the same handle."""

from __future__ import annotations

import torch


def nvml_index(device: torch.device) -> int:
    """The device's NVML index (CUDA_VISIBLE_DEVICES taken into account)."""
    try:
        return int(torch.cuda._get_nvml_device_index(device))
    except Exception:
        return int(device.index or 0)


def nvml_handle(device: torch.device):
    """(pynvml module, handle) for a CUDA device, or (None, reason)."""
    try:
        import pynvml
    except Exception as exc:  # pragma: no cover - depends on the machine
        return None, f"pynvml does not import: {str(exc).splitlines()[0][:120]}"
    try:
        pynvml.nvmlInit()
        return pynvml, pynvml.nvmlDeviceGetHandleByIndex(nvml_index(device))
    except Exception as exc:
        return None, f"NVML unavailable: {str(exc).splitlines()[0][:120]}"
