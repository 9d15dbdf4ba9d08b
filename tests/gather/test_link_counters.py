"""NVML NVLink counters around a stretch of work, against a fake NVML with known counters."""

from __future__ import annotations

import types

import torch

from impls.gather import link_counters


class FakeNvml:
    """Links 0-2 active (3 down); each call of the work moves 4 KiB payload and 5 KiB raw per link."""

    def __init__(self, supported=True):
        self.supported = supported
        self.kib = 0

    def nvmlDeviceGetNvLinkState(self, handle, link):
        if link >= 4:
            raise RuntimeError("no such link")
        return link != 3

    def nvmlDeviceGetFieldValues(self, handle, requests):
        out = []
        for fid, link in requests:
            assert link in (0, 1, 2)
            value = self.kib * (5 if fid in (140, 141) else 4)
            out.append(types.SimpleNamespace(fieldId=fid, nvmlReturn=0 if self.supported else 3,
                                             value=types.SimpleNamespace(ullVal=value)))
        return out


def test_counters_sum_active_links_and_split_payload_from_protocol(monkeypatch):
    fake = FakeNvml()
    monkeypatch.setattr("impls.core.nvml.nvml_handle", lambda device: (fake, "handle"))

    def work():
        fake.kib += 1

    out = link_counters.link_traffic(work, torch.device("cpu"), payload_bytes=3 * 4 * 1024, seconds=0.01,
                                     per_call_s=0.001)
    assert out["links"] == 3 and out["calls"] == 10
    assert out["data_rx_per_payload"] == 1.0                    # 3 links x 4 KiB = the payload
    assert out["raw_tx_per_payload"] == 1.25                    # protocol on top
    assert abs(out["raw_rx_GBps"] / out["data_rx_GBps"] - 1.25) < 0.01


def test_unsupported_counters_say_why(monkeypatch):
    monkeypatch.setattr("impls.core.nvml.nvml_handle", lambda device: (FakeNvml(supported=False), "h"))
    out = link_counters.link_traffic(lambda: None, torch.device("cpu"), payload_bytes=1.0, seconds=0.001)
    assert set(out) == {"reason"} and "does not support" in out["reason"]
    monkeypatch.setattr("impls.core.nvml.nvml_handle", lambda device: (None, "pynvml does not import"))
    assert link_counters.link_traffic(lambda: None, torch.device("cpu"), 1.0)["reason"] == "pynvml does not import"


def test_gather_report_lists_link_counters(tmp_path):
    from harness.report import report_runs
    from tests.helpers import H200_MANIFEST, row, write_run

    common = {"row_bytes": 512, "row_elems": 128, "dtype": "float32", "num_rows": 10,
              "ids_per_rank": 2_000_000, "mode": "chunked"}
    traffic = {"calls": 300, "seconds": 0.5, "links": 18, "data_tx_GBps": 330.0, "raw_tx_GBps": 420.0,
               "data_rx_GBps": 330.0, "raw_rx_GBps": 440.0, "data_rx_per_payload": 1.01,
               "raw_rx_per_payload": 1.33}
    copy = {"calls": 100, "seconds": 0.5, "links": 18, "data_tx_GBps": 370.0, "raw_tx_GBps": 400.0,
            "gpu1_data_rx_GBps": 370.0, "gpu1_raw_rx_GBps": 400.0, "data_tx_per_payload": 1.0,
            "raw_tx_per_payload": 1.08}
    rows = [row("ceiling_peer_copy", 400.0, experiment="wholegraph.gather", metric="peer_copy_bw", unit="GB/s",
                world_size=2, device="cuda", params={"copy_bytes": 1 << 30}, extra={"nvlink": copy}),
            row("p2p_shared", 1.6, experiment="wholegraph.gather", metric="time", unit="ms", world_size=2,
                device="cuda", params=common, extra={"nvlink": traffic}),
            row("p2p_shared", 640.0, experiment="wholegraph.gather", metric="algbw", unit="GB/s", world_size=2,
                device="cuda", params=common)]
    run = write_run(tmp_path / "results", "0001_h200x2_wholegraph.gather", H200_MANIFEST, rows)
    report_runs([run], tmp_path / "rep")
    md = (tmp_path / "rep" / "wholegraph" / "gather.md").read_text()
    gather = next(ln for ln in md.splitlines() if "NVLink counters" in ln and "512 B rows" in ln)
    assert "RX payload 330 / raw 440 GB/s (payload 75% of raw)" in gather
    assert "link payload per user byte 1.01" in gather and "p2p_shared (chunked)" in gather
    peer = next(ln for ln in md.splitlines() if "NVLink counters" in ln and "peer copy" in ln)
    assert "TX payload 370 / raw 400 GB/s (payload 92% of raw)" in peer and "GPU 1 RX payload 370" in peer
    limit = next(ln for ln in md.splitlines() if "raw byte rate the peer copy reaches" in ln)
    # 1.08 / 1.33 raw bytes per payload byte: reads deliver at most 81% of the ceiling; back to back
    # 300 calls x 2M ids x 512 B in 0.5 s = 614 GB/s against n/(n-1) x 370 = 740 GB/s
    assert "links at 110% of the raw byte rate" in limit and "at most 81% of the ceiling" in limit
    assert "reaches 614 GB/s = 83% of the ceiling measured the same way (n/(n-1) x 370 GB/s)" in limit
