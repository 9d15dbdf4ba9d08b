"""A spawned-rank experiment whose ranks can be made to die, for the rank-lifecycle tests.

``tests/lifecycle_run.py`` registers it before running the harness CLI; spawned ranks re-import
that script as their main module, so they know the experiment too.
"""

from __future__ import annotations

import os
import signal
import time

from harness.argtypes import nonneg_int, positive_int
from harness.experiment import Experiment, Measurement, Param, Point
from harness.needs import Needs
from harness.registry import register_experiment, register_impl


@register_impl("zzlife", "step", needs=Needs(devices=("cpu",)), summary="lifecycle test steps")
def _make_step(*args, **kwargs):
    return None


def _text(value: str) -> str:
    return value


@register_experiment
class LifecycleSteps(Experiment):
    id = "zzlife.steps"
    title = "rank lifecycle test"
    interface = "zzlife"
    impls = ("step",)
    metric, unit = "time", "s"
    spawn_ranks = True
    parameters = {
        "points": Param(3, positive_int, "points, run in order by one launch"),
        "die_point": Param(-1, int, "the point during which die_rank dies (-1: none)"),
        "die_rank": Param(1, nonneg_int, "the rank that dies"),
        "how": Param("sigkill", _text, "sigkill | exit3"),
        "sleep": Param(0.0, float, "seconds every rank sleeps in point sleep_point"),
        "sleep_point": Param(-1, int, "the point that sleeps (-1: every point)"),
        "sleep_rank": Param(-1, int, "the rank that sleeps (-1: every rank)"),
        "pid_dir": Param("", _text, "where each rank writes rank<r>.pid"),
        "shm": Param("off", _text, "on: every point holds a chunked host store in shared memory"),
        "interrupt_point": Param(-1, int, "the point during which rank 0 interrupts the run (SIGINT to the "
                                          "process that launched it, as Ctrl-C does), once"),
        "interrupt_flag": Param("", _text, "a file that says the interruption happened (then it never again)"),
        "log": Param("", _text, "a file rank 0 appends each point it measured to"),
    }

    def points(self, cfg):
        (world,) = self.world_sizes(cfg)
        for i in range(self.param(cfg, "points")):
            yield Point("step", {"i": i}, world_size=world)

    def run_point(self, point, ctx):
        import torch.distributed as dist

        cfg, rank = ctx.cfg, ctx.rank

        pid_dir = self.param(cfg, "pid_dir")
        if pid_dir:
            with open(os.path.join(pid_dir, f"rank{rank.rank}.pid"), "w") as fh:
                fh.write(str(os.getpid()))
        store = None
        if self.param(cfg, "shm") == "on":
            from impls.core.layout import TableSpec
            from impls.storage.shards import ShardedTable

            store = ShardedTable(rank, TableSpec(64, 4), "chunked")
        dist.barrier()
        if point.params["i"] == self.param(cfg, "die_point") and rank.rank == self.param(cfg, "die_rank"):
            time.sleep(0.5)               # the others are inside the point, as in a real failure
            if self.param(cfg, "how") == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(3)
        if self.param(cfg, "sleep_point") in (-1, point.params["i"]) and self.param(cfg, "sleep_rank") in (-1, rank.rank):
            time.sleep(self.param(cfg, "sleep"))
        flag = self.param(cfg, "interrupt_flag")
        if point.params["i"] == self.param(cfg, "interrupt_point") and flag and not os.path.exists(flag):
            if rank.rank == 0:
                open(flag, "w").close()
                os.kill(int(os.environ["HARNESS_LAUNCHER_PID"]), signal.SIGINT)   # as Ctrl-C would
            time.sleep(120)               # inside the point until the run stops its ranks
        dist.barrier()
        if self.param(cfg, "log") and rank.rank == 0:
            with open(self.param(cfg, "log"), "a") as fh:
                fh.write(f"{point.params['i']}\n")
        if store is not None:
            store.close()
        return [Measurement("time", "s", value=1.0 + point.params["i"])]

    def report(self, rows, runs):
        from harness.artifact import ReportArtifact
        from harness.reportkit import caption_hardware

        table = rows[["impl", "status", "value"]].copy()
        return ReportArtifact("steps", self.title, caption_hardware(runs), table)
