"""Names of the host shared-memory files ranks create (CPU stores, pinned host tables).

Every launch of ranks gets its own prefix (``harness-<launcher pid>-<token>``), handed to the
ranks in ``HARNESS_SHM_PREFIX``, so the launcher can remove what a launch left behind however
its ranks ended: a rank killed or stopped mid-point never reaches its store's ``close()``.
Files of launchers that died without cleaning up are removed by the next launch.
``HARNESS_SHM_DIR`` moves the folder (default /dev/shm).

Under torchrun the launcher of a node's ranks is that node's agent (their parent process): the ranks
of one node share :func:`node_prefix`, and ranks of other nodes (other agents), even nodes emulated on
one host, never open each other's files.
"""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path

PREFIX_ENV = "HARNESS_SHM_PREFIX"
_LAUNCH_PREFIX = re.compile(r"^harness-(\d{1,7})-[0-9a-f]{8}-")


def shm_dir() -> Path:
    return Path(os.environ.get("HARNESS_SHM_DIR", "/dev/shm"))


def segment_path(name: str) -> Path:
    """Where a shared-memory file called ``name`` lives for the current launch."""
    return shm_dir() / f"{os.environ.get(PREFIX_ENV, 'harness')}-{name}"


def new_launch_prefix() -> str:
    return f"harness-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def node_prefix() -> str:
    """The prefix of the ranks a torchrun agent (this process's parent) started: its pid, and the
    job's id, so that every rank of the node names it alike and nobody else does."""
    import hashlib

    job = os.environ.get("TORCHELASTIC_RUN_ID", "") + os.environ.get("MASTER_PORT", "")
    return f"harness-{os.getppid()}-{hashlib.blake2b(job.encode(), digest_size=4).hexdigest()}"


def remove_segments(prefix: str) -> None:
    """Delete every file a launch with ``prefix`` created."""
    for path in shm_dir().glob(f"{prefix}-*"):
        path.unlink(missing_ok=True)


def remove_orphans() -> None:
    """Delete the files of launches whose launcher process is gone."""
    import psutil

    try:
        entries = list(shm_dir().iterdir())
    except OSError:
        return
    for path in entries:
        m = _LAUNCH_PREFIX.match(path.name)
        if m and not psutil.pid_exists(int(m.group(1))):
            try:
                path.unlink(missing_ok=True)
            except OSError:     # another user's file
                pass
