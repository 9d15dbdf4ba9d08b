"""OGB node-property datasets through the ``ogb`` package's own API (``pip install '.[ogb]'``).

- :func:`read_node_dataset`: a dataset folder on disk (as OGB unzips a download, or as
  ``ogb.io.DatasetSaver`` writes one) read by ``ogb.nodeproppred.NodePropPredDataset``, never
  downloading: ogb gets a ``meta_dict`` (its ``master.csv`` entry for the name, else the saver's
  fields) pointing at the folder, with the version of the folder's ``RELEASE_v*.txt`` (ogb asks
  to re-download a folder whose release file it does not find, so a folder without one is read
  by the harness's own readers in loaders.py) and the format of the files present (binary
  ``raw/data.npz`` or CSV ``raw/edge.csv.gz``).
- :func:`fetch`: ``python -m harness data fetch NAME``, for users with network access: ogb
  downloads the dataset into the data root (``<root>/ogbn_products/``, where the loaders look).

ogb 1.3.6 calls ``torch.load`` without ``weights_only``; torch >= 2.6 then refuses the numpy
arrays in ogb's own pickles (``processed/data_processed``, ``split_dict.pt``), so ogb's calls run
under ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` (:func:`ogb_pickles`): they read files of the user's
data root that ogb itself wrote or unpacked.
"""

from __future__ import annotations

import os
import re
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import HarnessError


def available() -> bool:
    try:
        import ogb.nodeproppred  # noqa: F401
    except ImportError:
        return False
    return True


@contextmanager
def ogb_pickles():
    """torch.load inside ogb reads its numpy pickles (module doc); the variable is restored after."""
    key = "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"
    saved = os.environ.get(key)
    os.environ[key] = "1"
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=f"Environment variable {key} detected")
            yield
    finally:
        if saved is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = saved


def release_version(directory: Path) -> int | None:
    """The version of the folder's ``RELEASE_v<N>.txt`` (the newest when several), or None."""
    versions = [int(m.group(1)) for p in directory.glob("RELEASE_v*.txt")
                if (m := re.fullmatch(r"RELEASE_v(\d+)\.txt", p.name))]
    return max(versions) if versions else None


def meta_dict(name: str, directory: Path, split: str | None = None) -> dict[str, Any]:
    """ogb's meta information for the dataset folder ``directory`` (module doc)."""
    import ogb.nodeproppred
    import pandas as pd

    master = pd.read_csv(Path(ogb.nodeproppred.__file__).parent / "master.csv", index_col=0,
                         keep_default_na=False)
    meta: dict[str, Any] = dict(master[name]) if name in master else {
        "num tasks": 1, "task type": "multiclass classification", "eval metric": "acc",
        "add_inverse_edge": "False", "has_node_attr": "True", "has_edge_attr": "False",
        "additional node files": "None", "additional edge files": "None", "is hetero": "False"}
    splits = sorted(p.name for p in (directory / "split").iterdir() if p.is_dir()) \
        if (directory / "split").is_dir() else []
    if split not in splits:
        split = meta.get("split") if meta.get("split") in splits else (splits[0] if len(splits) == 1 else split)
    binary = (directory / "raw" / "data.npz").exists()
    meta.update({"dir_path": str(directory), "version": release_version(directory), "split": split,
                 "binary": str(binary)})
    if binary:
        meta["add_inverse_edge"] = "False"     # ogb's binary reader takes edges as stored; the cache symmetrizes
    return meta


def read_node_dataset(name: str, directory: Path, split: str | None = None):
    """(graph dict, labels, (train, valid, test)) of the OGB folder ``directory`` through ogb's
    NodePropPredDataset, or None where ogb is not installed or the folder has no release file.
    Raises HarnessError (one line naming the folder) when ogb cannot read it."""
    if not available() or release_version(directory) is None:
        return None
    raw = directory / "raw"
    processed = directory / "processed" / "data_processed"
    if not ((raw / "data.npz").exists() or (raw / "edge.csv.gz").exists() or processed.exists()):
        return None                 # ogb would download: nothing of the dataset is here
    from ogb.nodeproppred import NodePropPredDataset

    meta = meta_dict(name, directory, split)
    try:
        with ogb_pickles():
            dataset = NodePropPredDataset(name=name, meta_dict=meta)
            parts = dataset.get_idx_split()
    except (Exception, SystemExit) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        raise HarnessError(f"{directory}: ogb cannot read this OGB dataset folder "
                           f"({type(exc).__name__}: {first})") from None
    graph, labels = dataset[0]
    return graph, np.asarray(labels), (np.asarray(parts["train"]), np.asarray(parts["valid"]),
                                       np.asarray(parts["test"]))


def fetch(name: str, root: Path) -> Path:
    """Download OGB node-property dataset ``name`` into ``root`` with ogb; returns its folder."""
    if not available():
        raise HarnessError("data fetch downloads through the ogb package: pip install '.[ogb]'")
    from ogb.nodeproppred import NodePropPredDataset

    root.mkdir(parents=True, exist_ok=True)
    try:
        with ogb_pickles():
            dataset = NodePropPredDataset(name=name, root=str(root))
    except EOFError:
        raise HarnessError(f"ogb asks to confirm the download of {name} (over 1 GB): run `harness data fetch` "
                           "in a terminal") from None
    except SystemExit:
        raise HarnessError(f"download of {name} stopped (declined)") from None
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        raise HarnessError(f"ogb could not fetch {name}: {type(exc).__name__}: {first}") from None
    return Path(dataset.root)
