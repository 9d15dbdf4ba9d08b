"""What an experiment's report is made of: the runs it read and the artifact it returns."""

from __future__ import annotations

from dataclasses import dataclass, field

from .store import StoredRun, run_status


@dataclass
class RunInfo:
    run_id: str
    hardware: str            # short tag, e.g. 2xH200
    manifest: dict

    @classmethod
    def from_stored(cls, run: StoredRun) -> "RunInfo":
        return cls(run.run_id, run.manifest.get("hardware", "unknown"), run.manifest)

    @property
    def status(self) -> str:
        return run_status(self.manifest)

    def describe(self) -> str:
        """One sentence naming the hardware and software a run was measured on."""
        m = self.manifest
        gpus = m.get("gpus", {})
        sw = m.get("software", {})
        parts = []
        if gpus.get("count"):
            parts.append(f"{gpus['count']}x {gpus['devices'][0]['name']}")
            topo = (gpus.get("topology") or {}).get("matrix")
            if topo and len(topo) > 1:
                links = sorted({c for i, row in enumerate(topo) for j, c in enumerate(row) if i != j})
                parts.append("links " + "/".join(links))
            if gpus.get("driver"):
                parts.append(f"driver {gpus['driver']}")
        else:
            host = m.get("host", {})
            parts.append(f"CPU only ({host.get('cpu_model', 'unknown CPU')}, {host.get('cpu_count')} cores)")
        nodes = m.get("topology") or {}
        if nodes.get("nodes", 1) > 1:
            parts.append(nodes.get("label") or f"{nodes['nodes']} nodes")     # says "emulated nodes (one host)"
        if sw.get("cuda"):
            parts.append(f"CUDA {sw['cuda']}")
        if sw.get("torch"):
            parts.append(f"torch {sw['torch']}")
        if sw.get("nccl"):
            parts.append(f"NCCL {sw['nccl']}")
        git = m.get("git", {})
        commits = git.get("commits") or [git.get("commit") or "unknown"]
        dirty = " (dirty)" if git.get("dirty") else ""
        text = (f"{self.run_id}: " + ", ".join(parts)
                + f"; commit{'s' if len(commits) > 1 else ''} {', '.join(c[:10] for c in commits)}{dirty}")
        if self.status == "abandoned":
            text += f"; {ABANDONED_NOTE}"
        return text


ABANDONED_NOTE = "abandoned: its process ended without finishing the run (killed?), so its rows may stop short"


@dataclass
class ReportArtifact:
    name: str                 # file stem, e.g. "table1"
    title: str
    caption: str
    table: "object"           # pandas.DataFrame
    notes: list[str] = field(default_factory=list)
    figure: "object | None" = None   # matplotlib Figure
    headline: str = ""        # one line for the reports index: paper vs measured
    status: str = ""          # the verdict of harness/verdicts.py over its claims, or measured (default)
    # every run's rows, where the headline table shows fewer (newest per machine kind): written
    # apart as <name>.history.csv and .md
    history: "object | None" = None
