"""Machine metadata for manifests and `harness env`: versions, GPUs, topology, git state.

Environment variables are recorded only from a named allow-list, never wholesale,
so secrets in the environment cannot leak into committed results.
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

from . import __version__

REPO_ROOT = Path(__file__).resolve().parent.parent

ENV_VARS = (
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_LAUNCH_BLOCKING",
    "NCCL_DEBUG", "NCCL_ALGO", "NCCL_PROTO", "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL",
    "NCCL_SHM_DISABLE", "NCCL_NVLS_ENABLE", "NCCL_IB_DISABLE", "NCCL_MIN_NCHANNELS",
    "NCCL_MAX_NCHANNELS", "NCCL_BUFFSIZE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "NVSHMEM_DISABLE_NVLS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTORCH_CUDA_ALLOC_CONF",
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "TORCHELASTIC_RUN_ID",
    "NCCL_HOSTID", "NCCL_SOCKET_IFNAME", "NCCL_NET", "HARNESS_DEVICE", "HARNESS_DATA_ROOT",
    "HARNESS_CACHE_DIR", "HARNESS_PROFILE_DIR", "HARNESS_PROFILE_EPOCH", "HARNESS_PROFILE_RANKS",
)

PACKAGES = (
    "torch", "numpy", "pandas", "matplotlib", "numba", "cupy-cuda13x", "cupy-cuda12x", "cuda-bindings",
    "triton", "torch-geometric", "torch-sparse", "torch-scatter", "pyg-lib", "dgl",
    "pylibwholegraph-cu13", "pylibwholegraph-cu12", "ogb", "pymetis", "nvidia-ml-py",
    "pytest-benchmark", "rich",
)


def _run(cmd: list[str], cwd: Path | None = None, timeout: float = 20.0) -> str | None:
    try:
        out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def git_state(repo: Path = REPO_ROOT) -> dict:
    """The commit the tree was at and whether it was clean (``dirty``: tracked files changed, or
    files git does not ignore and does not track: both travel with a copied tree and can change
    what runs). HARNESS_GIT_COMMIT / HARNESS_GIT_DIRTY (0 or 1), set by whoever copied the tree to
    another machine (.ci/device.sh), win over the copy's own .git, which can be older than the tree
    (the lent GPU machines carry the .git of the session's start); a commit given without
    HARNESS_GIT_DIRTY counts as dirty, since nobody said the tree was clean."""
    if os.environ.get("HARNESS_GIT_COMMIT"):
        flag = os.environ.get("HARNESS_GIT_DIRTY", "").strip()
        state = {"commit": os.environ["HARNESS_GIT_COMMIT"].strip(), "dirty": flag != "0",
                 "source": "environment (HARNESS_GIT_COMMIT, set by whoever copied the tree)"}
        if flag not in ("0", "1"):
            state["dirty_unknown"] = "HARNESS_GIT_DIRTY was not 0 or 1, so the tree counts as dirty"
        return state
    commit = _run(["git", "rev-parse", "HEAD"], cwd=repo)
    status = _run(["git", "status", "--porcelain", "--untracked-files=normal"], cwd=repo)
    state = {
        "commit": commit.strip() if commit else None,
        "dirty": bool(status.strip()) if status is not None else None,
    }
    if status and status.strip():
        changed = [line[3:] for line in status.splitlines() if line.strip()]
        state["changes"] = changed[:10] + ([f"and {len(changed) - 10} more"] if len(changed) > 10 else [])
    return state


def package_versions(names=PACKAGES) -> dict[str, str]:
    found = {}
    for name in names:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def parse_topology(text: str) -> dict | None:
    """Parse ``nvidia-smi topo -m`` into ``{"gpus": [...], "matrix": [[...]]}`` (GPU rows only)."""
    if not text:
        return None
    ansi = re.compile(r"\x1b\[[0-9;]*m")
    lines = [ansi.sub("", ln).rstrip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return None
    header = lines[0].split()
    gpu_cols = [h for h in header if re.fullmatch(r"GPU\d+", h)]
    if not gpu_cols:
        return None
    matrix, names = [], []
    for line in lines[1:]:
        cells = line.split()
        if not cells or not re.fullmatch(r"GPU\d+", cells[0]):
            continue
        names.append(cells[0])
        matrix.append(cells[1:1 + len(gpu_cols)])
    return {"gpus": names, "matrix": matrix} if matrix else None


def gpu_info() -> dict:
    """GPUs as torch sees them plus the driver and the link matrix where available."""
    info: dict = {"count": 0, "devices": []}
    try:
        import torch
    except ImportError:
        return info
    if torch.cuda.is_available():
        count = torch.cuda.device_count()
        info["count"] = count
        for i in range(count):
            props = torch.cuda.get_device_properties(i)
            info["devices"].append({
                "index": i, "name": props.name,
                "memory_bytes": int(props.total_memory),
                "capability": f"{props.major}.{props.minor}",
                "multiprocessors": props.multi_processor_count,
            })
        info["peer_access"] = [[i == j or torch.cuda.can_device_access_peer(i, j)
                                for j in range(count)] for i in range(count)]
    if shutil.which("nvidia-smi"):
        driver = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
        if driver:
            info["driver"] = driver.strip().splitlines()[0]
        topo = _run(["nvidia-smi", "topo", "-m"])
        if topo:
            info["topology_text"] = topo
            info["topology"] = parse_topology(topo)
    return info


def software() -> dict:
    out = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "harness": __version__,
        "packages": package_versions(),
    }
    try:
        import torch

        out["torch"] = torch.__version__
        out["cuda"] = torch.version.cuda
        if torch.cuda.is_available():
            try:
                nccl = torch.cuda.nccl.version()
                out["nccl"] = ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl)
            except Exception:  # NCCL absent from this build
                out["nccl"] = None
    except ImportError:
        pass
    return out


def host_info() -> dict:
    info = {"cpu_count": os.cpu_count(), "machine": platform.machine()}
    try:
        import psutil

        info["memory_bytes"] = int(psutil.virtual_memory().total)
    except ImportError:
        pass
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(errors="ignore").splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    return info


def env_vars() -> dict[str, str]:
    return {k: os.environ[k] for k in ENV_VARS if k in os.environ}


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def hardware_tag(gpus: dict, device: str) -> str:
    """Short label such as ``2xH200`` or ``cpu``, used in run directory names and captions."""
    if device != "cuda" or not gpus.get("devices"):
        return "cpu"
    name = gpus["devices"][0]["name"].replace("NVIDIA", "").strip()
    short = name.split()[0] if name else "gpu"
    return f"{gpus['count']}x{short}"


def capture(command: list[str], extra: dict | None = None) -> dict:
    """The manifest of a run (everything but rows)."""
    gpus = gpu_info()
    manifest = {
        "command": " ".join(command),
        "git": git_state(),
        "software": software(),
        "host": host_info(),
        "gpus": gpus,
        "env": env_vars(),
        "start": now_iso(),
    }
    if extra:
        manifest.update(extra)
    return manifest
