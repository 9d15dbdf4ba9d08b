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


def device_processes(device: torch.device) -> list[dict] | None:
    """The processes holding memory on a CUDA device, as NVML lists them (what nvidia-smi shows per
    process): ``{"pid", "used_bytes", "own"}`` largest first; ``own`` marks this process (NVML
    reports the host's pids: inside a container of its own pid namespace none matches). None
    where NVML cannot tell."""
    import os

    nvml, handle = nvml_handle(device)
    if nvml is None:
        return None
    try:
        procs = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
    except Exception:
        return None
    me = os.getpid()
    out = [{"pid": int(p.pid), "used_bytes": int(p.usedGpuMemory or 0), "own": int(p.pid) == me} for p in procs]
    return sorted(out, key=lambda p: -p["used_bytes"])
