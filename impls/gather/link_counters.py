"""NVLink traffic counters read through NVML around a stretch of work.

Nsight Compute serializes kernels of different processes, so it cannot show the links while
every rank gathers at once. NVML's cumulative per-link counters can: ``THROUGHPUT_DATA`` is the
payload that crossed a link, ``THROUGHPUT_RAW`` the payload plus protocol (packet headers, read
requests, flow control). Their ratio says how much of a link's capacity a traffic pattern spends
on protocol: remote reads by SMs send a request packet for every response, copy-engine pushes do
not. Fields a driver does not support are left out; with none at all, ``reason`` says why.
"""

from __future__ import annotations

import torch

KIB = 1024
# NVML field ids (nvml.h): cumulative KiB per link
FIELDS = {"data_tx": 138, "data_rx": 139, "raw_tx": 140, "raw_rx": 141}
MAX_LINKS = 18          # NVLink 4 (Hopper) has 18 links per GPU


class NvlinkCounters:
    """Sums NVML's NVLink byte counters over every active link of one device."""

    def __init__(self, device: torch.device):
        from impls.core.nvml import nvml_handle

        self.reason = ""
        self.links: list[int] = []
        self._nvml, handle = nvml_handle(device)
        if self._nvml is None:
            self.reason = str(handle)
            return
        self._handle = handle
        for link in range(MAX_LINKS):
            try:
                if self._nvml.nvmlDeviceGetNvLinkState(handle, link):
                    self.links.append(link)
            except Exception:
                continue
        if not self.links:
            self.reason = "NVML reports no active NVLink on this device"
            return
        if not self._read():
            self.reason = "NVML does not support the NVLink throughput fields on this driver"

    def _read(self) -> dict[str, int]:
        requests = [(fid, link) for fid in FIELDS.values() for link in self.links]
        try:
            values = self._nvml.nvmlDeviceGetFieldValues(self._handle, requests)
        except Exception:
            return {}
        totals: dict[str, int] = {}
        names = {fid: name for name, fid in FIELDS.items()}
        for v in values:
            if v.nvmlReturn != 0:
                continue
            name = names[v.fieldId]
            totals[name] = totals.get(name, 0) + int(v.value.ullVal) * KIB
        return totals

    def snapshot(self) -> dict[str, int]:
        """Cumulative bytes per counter (empty when unsupported)."""
        return self._read() if not self.reason else {}

    @staticmethod
    def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
        return {k: after[k] - before[k] for k in after if k in before}


def link_traffic(fn, device: torch.device, payload_bytes: float, seconds: float = 0.5,
                 per_call_s: float = 1e-3, peers: tuple[torch.device, ...] = ()) -> dict:
    """Runs ``fn`` back to back for about ``seconds`` and returns what crossed this device's
    links (and those of ``peers``, keyed by their index): bytes per ``payload_bytes`` of user
    data moved by one call, and GB/s, or {"reason": ...} where the counters are unavailable.
    The caller brackets it with barriers so that every rank's calls overlap."""
    from harness.timing import now

    counters = [(device, NvlinkCounters(device))] + [(p, NvlinkCounters(p)) for p in peers]
    if counters[0][1].reason:
        return {"reason": counters[0][1].reason}
    calls = max(3, int(seconds / max(per_call_s, 1e-6)))

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    sync()
    before = [c.snapshot() for _, c in counters]
    start = now()
    for _ in range(calls):
        fn()
    sync()
    elapsed = now() - start
    after = [c.snapshot() for _, c in counters]
    out: dict = {"calls": calls, "seconds": round(elapsed, 4), "links": len(counters[0][1].links)}
    for (dev, _), b, a in zip(counters, before, after):
        moved = NvlinkCounters.delta(b, a)
        key = "" if dev == device else f"gpu{dev.index}_"
        for name, value in moved.items():
            out[f"{key}{name}_GBps"] = round(value / elapsed / 1e9, 2)
            if payload_bytes > 0:
                out[f"{key}{name}_per_payload"] = round(value / (calls * payload_bytes), 4)
    return out
