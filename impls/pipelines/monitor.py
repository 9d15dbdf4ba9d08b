"""Utilization over time while a pipeline trains (WholeGraph Fig. 12), sampled in a side thread.

On a GPU rank: NVML's ``utilization.gpu`` of the rank's device (pynvml / nvidia-ml-py), every
``interval_s`` (default 20 ms). NVML reports the share of its last sample period (1/6 s to 1 s,
driver-dependent) during which a kernel ran, so faster polling repeats values rather than
resolving shorter gaps; the trace is still the curve nvidia-smi would draw. Where pynvml does not
import, ``nvidia-smi --query-gpu=utilization.gpu -lms`` streams the same counter (kind
``gpu_nvidia_smi``). On a CPU rank, or where neither works: the process's CPU utilization
(psutil, percent of one core, every 100 ms at least), labelled as such. ``summary()`` gives the statistics and a trace cut to
at most ``max_points`` points (bucket means) for plots.
"""

from __future__ import annotations

import shutil
import subprocess
import threading

import torch

from harness.timing import now
from impls.core.nvml import nvml_handle, nvml_index


class UtilizationMonitor:
    def __init__(self, device: torch.device, interval_s: float = 0.02, max_points: int = 400):
        self.device = device
        self.max_points = max_points
        self.times: list[float] = []
        self.values: list[float] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._nvml = self._handle = self._smi = None
        self.note = ""
        if device.type == "cuda":
            self._nvml, handle = nvml_handle(device)
            if self._nvml is None:
                self.note = handle
            else:
                self._handle = handle
        if self._nvml is not None:
            self.kind = "gpu_nvml"
            self.interval_s = interval_s
        elif device.type == "cuda" and shutil.which("nvidia-smi"):
            self.kind = "gpu_nvidia_smi"
            self.interval_s = max(interval_s, 0.01)
        else:
            import psutil

            self.kind = "cpu_process"
            self.interval_s = max(interval_s, 0.1)
            self._proc = psutil.Process()

    def _read(self) -> float:
        if self._nvml is not None:
            return float(self._nvml.nvmlDeviceGetUtilizationRates(self._handle).gpu)
        return float(self._proc.cpu_percent(interval=None))

    def _run_smi(self) -> None:
        start = self.t0
        for line in self._smi.stdout:
            if self._stop.is_set():
                break
            try:
                value = float(line.strip())
            except ValueError:
                continue
            self.times.append(now() - start)
            self.values.append(value)

    def _run(self) -> None:
        if self.kind == "gpu_nvidia_smi":
            return self._run_smi()
        start = self.t0
        if self._nvml is None:
            self._read()                               # psutil's first call only sets the baseline
        while not self._stop.wait(self.interval_s):
            self.times.append(now() - start)
            self.values.append(self._read())

    def start(self) -> "UtilizationMonitor":
        self._stop.clear()
        self.t0 = now()        # sample times are seconds after this
        if self.kind == "gpu_nvidia_smi":
            cmd = ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                   "-i", str(nvml_index(self.device)), "-lms", str(max(1, int(round(self.interval_s * 1e3))))]
            self._smi = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self._thread = threading.Thread(target=self._run, name="utilization-monitor", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> dict:
        if self._thread is not None:
            self._stop.set()
            if self._smi is not None:
                self._smi.terminate()
                try:
                    self._smi.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self._smi.kill()
                    self._smi.wait(timeout=5)
                self._smi = None
            self._thread.join(timeout=5)
            self._thread = None
        if self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except Exception:
                pass
            self._nvml = None
        return self.summary()

    def window_summary(self, windows: list[tuple[float, float]], settle_s: float = 0.2) -> dict:
        """Statistics of the samples taken inside ``windows`` (``harness.timing.now()`` intervals), each
        window's first ``settle_s`` left out: NVML's figure is an average over its last sample
        period (1/6 s to 1 s), so an early sample still describes the time before the window."""
        spans = [(a - self.t0 + settle_s, b - self.t0) for a, b in windows]
        keep = [v for t, v in zip(self.times, self.values) if any(a <= t <= b for a, b in spans)]
        return self._stats(keep)

    @staticmethod
    def _stats(values: list[float]) -> dict:
        vals = sorted(values)
        n = len(vals)
        if not n:
            return {"samples": 0}
        q = lambda f: vals[min(n - 1, int(round(f * (n - 1))))]  # noqa: E731
        return {"samples": n, "mean": sum(vals) / n, "min": vals[0], "p10": q(0.1), "p50": q(0.5), "p90": q(0.9),
                "max": vals[-1], "share_ge_90": sum(v >= 90 for v in vals) / n,
                "share_zero": sum(v == 0 for v in vals) / n}

    def summary(self) -> dict:
        vals = sorted(self.values)
        out = {"kind": self.kind, "interval_ms": round(self.interval_s * 1e3, 3), "samples": len(vals),
               "unit": "% of one core (process CPU)" if self.kind == "cpu_process" else "% (GPU busy, NVML)"}
        if self.note:
            out["note"] = self.note
        if not vals:
            return out
        n = len(vals)
        stats = self._stats(vals)
        stats.pop("samples")
        out.update(stats)
        times, values = self.times, self.values
        if n > self.max_points:
            step = n / self.max_points
            cuts = [int(i * step) for i in range(self.max_points + 1)]
            times = [sum(times[a:b]) / (b - a) for a, b in zip(cuts, cuts[1:]) if b > a]
            values = [sum(values[a:b]) / (b - a) for a, b in zip(cuts, cuts[1:]) if b > a]
        out["trace_s"] = [round(t, 4) for t in times]
        out["trace"] = [round(v, 2) for v in values]
        return out
