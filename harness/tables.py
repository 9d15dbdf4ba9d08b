"""Helpers experiments use to turn stored rows into paper-style tables."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from .report import RunInfo


def expand_params(rows: "pd.DataFrame") -> "pd.DataFrame":
    """A copy of ``rows`` with each key of ``params`` and of the measurement's ``extra`` as its
    own column ``p_<key>`` (rows stored before ``extra`` existed carried it inside params)."""
    import pandas as pd

    out = rows.copy()
    extras = out["extra"].tolist() if "extra" in out else [None] * len(out)
    merged = [{**(p or {}), **(e if isinstance(e, dict) else {})} for p, e in zip(out["params"], extras)]
    params = pd.json_normalize(merged, max_level=0).add_prefix("p_")
    params.index = out.index
    return pd.concat([out, params], axis=1)


def run_labels(rows: "pd.DataFrame", runs: list["RunInfo"]) -> dict[str, str]:
    """run_id -> column label: the hardware tag, made unique with the run number if needed."""
    tags = {r.run_id: _tag_with_gpus_used(r.hardware, rows, r.run_id) for r in runs}
    for run_id in rows["run_id"].unique():
        tags.setdefault(run_id, "unknown")
    counts: dict[str, int] = {}
    for tag in tags.values():
        counts[tag] = counts.get(tag, 0) + 1
    return {rid: (tag if counts[tag] == 1 else f"{tag} #{rid.split('_')[0]}") for rid, tag in tags.items()}


def _tag_with_gpus_used(tag: str, rows: "pd.DataFrame", run_id: str) -> str:
    """'2 of 4xH200' for a run that used 2 GPUs of a 4-GPU machine (``--gpus 2``)."""
    m = re.fullmatch(r"(\d+)x(.+)", tag or "")
    if not m or "world_size" not in rows or "run_id" not in rows:
        return tag
    mine = rows[(rows["run_id"] == run_id) & (rows.get("device", "cuda") == "cuda")]
    used = set(mine["world_size"].dropna().astype(int)) if not mine.empty else set()
    if len(used) == 1 and 0 < (w := used.pop()) < int(m.group(1)):
        return f"{w} of {tag}"
    return tag


def machine_kind(label: str) -> str:
    """'4xH200 #0084' -> '4xH200': the run label without its run number."""
    return re.sub(r" #\d+$", "", label)


def skip_notes(rows: "pd.DataFrame", labels: dict[str, str]) -> list[str]:
    """One note per distinct (run, impl, reason) of skipped or failed rows, leaving out those a later
    run on the same kind of machine superseded by trying that implementation of the experiment
    again (its own rows or notes say how it went; an old reason, such as a package then missing or
    code then unwritten, no longer explains anything)."""
    notes, seen = [], set()
    ran: dict = {}
    for _, r in rows.iterrows():
        key = (machine_kind(labels.get(r["run_id"], r["run_id"])), r.get("experiment"), r["impl"])
        ran[key] = max(ran.get(key, ""), r["run_id"])
    for _, r in rows[rows["status"] != "ok"].iterrows():
        key = (labels.get(r["run_id"], r["run_id"]), r["impl"], r.get("reason"))
        if key in seen or ran.get((machine_kind(key[0]), r.get("experiment"), r["impl"]), "") > r["run_id"]:
            continue
        seen.add(key)
        notes.append(f"{key[0]} `{r['impl']}` {r['status']}: {r.get('reason')}")
    return notes


def caption_hardware(runs: list["RunInfo"]) -> str:
    return " ".join(f"Measured on {r.describe()}." for r in runs)
