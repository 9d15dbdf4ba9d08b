"""How many ranks a run's points use: the one reader of ``--gpus`` / ``--ranks``.

The run's count (:func:`run_world`): ``--gpus``/``--ranks N`` when given; else, under torchrun,
its world; else every visible GPU (``--device cuda``) or 2 CPU ranks (enough to exercise the
communication on any machine).

An experiment declares the counts its points can use (``Experiment.worlds``, a :class:`Worlds`),
and :func:`world_sizes` turns the run's count into the counts its points run with:

- ``Worlds()``: any count; the points use the run's.
- ``Worlds(default=1)``: the run's count when ``--gpus``/``--ranks`` is given, else this one (a
  profile the paper takes on one GPU).
- ``Worlds(fixed=(1,))``: only these counts (an experiment of one GPU, or of one rank per part):
  ``--gpus N`` outside them is an error; without it, the largest of them the run has room for.
- ``Worlds(ladder=(1, 2, 4, 8))``: a scaling experiment: every count of the ladder up to the
  run's, and the run's own.
- ``Worlds(counts=(1, 4))``: exactly these counts (a scaling experiment's ``--param gpus``), those
  above the run's left out; none left is an error.
- ``cpu=Worlds(...)``: what a CPU run can use when it differs (WholeGraph's Table I chases over
  any number of GPUs, but a CPU run has one host memory).

A count is never replaced silently: what the points use is what the rows and the manifest say.

Nodes (:func:`run_nodes`): under ``torchrun --nnodes N --nproc-per-node G`` the run's ranks span N
nodes of G ranks (torchrun's ``GROUP_WORLD_SIZE`` and ``LOCAL_WORLD_SIZE``); under the harness's own
launcher every rank is on one node. Which node each rank is on, and on which host, the ranks learn
when their group forms (``harness.launcher.Topology``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .errors import HarnessError
from .launcher import under_torchrun

CPU_RANKS = 2        # CPU ranks when --ranks is not given


@dataclass(frozen=True)
class Worlds:
    """The rank counts an experiment's points can use (module doc)."""

    fixed: tuple[int, ...] = ()
    default: int | None = None
    ladder: tuple[int, ...] = ()
    counts: tuple[int, ...] = ()
    cpu: "Worlds | None" = None

    def on(self, device: str) -> "Worlds":
        return self.cpu if (device == "cpu" and self.cpu is not None) else self


def _unit(cfg, count: int = 2) -> str:
    unit = "GPU" if cfg.device == "cuda" else "CPU rank"
    return unit if count == 1 else unit + "s"


def run_world(cfg) -> int:
    """The run's rank count (module doc)."""
    if cfg.world_size:
        if cfg.device == "cuda":
            visible = _visible_gpus()
            if cfg.world_size > visible:
                raise HarnessError(f"asked for {cfg.world_size} GPUs, {visible} visible")
        return cfg.world_size
    if under_torchrun():
        return int(os.environ["WORLD_SIZE"])
    if cfg.device == "cuda":
        return max(1, _visible_gpus())
    return CPU_RANKS


def run_nodes(cfg) -> tuple[int, int]:
    """(nodes, ranks per node) of the run (module doc)."""
    if under_torchrun():
        nodes = int(os.environ.get("GROUP_WORLD_SIZE", "1"))
        return nodes, int(os.environ.get("LOCAL_WORLD_SIZE", str(run_world(cfg) // max(1, nodes))))
    return 1, run_world(cfg)


def _visible_gpus() -> int:
    from .needs import detect

    return detect().gpu_count


def world_sizes(cfg, worlds: Worlds = Worlds(), who: str = "this experiment") -> list[int]:
    """The counts ``who``'s points use in this run (module doc)."""
    w = worlds.on(cfg.device)
    limit = run_world(cfg)
    if w.default is not None:
        return [limit if cfg.world_size else w.default]
    if w.fixed:
        if cfg.world_size is not None and cfg.world_size not in w.fixed:
            counts = f"{' or '.join(map(str, w.fixed))} {_unit(cfg, max(w.fixed))}"
            raise HarnessError(f"{who} runs on {counts}, not the {cfg.world_size} that --gpus/--ranks asks for "
                               "(leave the option out)")
        if cfg.world_size is not None:
            return [cfg.world_size]
        room = [c for c in w.fixed if c <= limit]
        return [max(room) if room else min(w.fixed)]
    if w.counts:
        sizes = sorted({c for c in w.counts if 1 <= c <= limit})
        if not sizes:
            raise HarnessError(f"{who}: none of the counts {','.join(map(str, w.counts))} fits the {limit} "
                               f"{_unit(cfg)} of this run")
        return sizes
    if w.ladder:
        sizes = [c for c in w.ladder if c <= limit]
        return sizes if limit in sizes else sizes + [limit]
    return [limit]
