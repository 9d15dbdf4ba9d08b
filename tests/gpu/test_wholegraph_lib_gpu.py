"""The real pylibwholegraph through `gather.wholegraph_lib` and `sampling.wholegraph_lib`.

Runs inside harness.launcher on CUDA ranks (2 where two GPUs are visible, else 1). Skipped
cleanly unless CUDA, a GPU and an importable pylibwholegraph are all present.
"""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

if not torch.cuda.is_available() or torch.cuda.device_count() < 1:
    pytest.skip("needs a CUDA GPU (torch.cuda.is_available() is False)", allow_module_level=True)

try:
    import pylibwholegraph  # noqa: F401
except Exception as exc:  # not installed, or its shared libraries do not load
    pytest.skip(f"pylibwholegraph does not import: {str(exc).splitlines()[0][:160]}",
                allow_module_level=True)

from harness.launcher import launch  # noqa: E402

from . import wholegraph_targets as targets  # noqa: E402

pytestmark = pytest.mark.gpu

WORLD = 2 if torch.cuda.device_count() >= 2 else 1
MODES = ["continuous", "chunked", "distributed"]
DTYPES = ["float32", "bfloat16", "float16", "int64"]
# 1001 rows leave a short last shard; 37-element rows are not 16-byte multiples, so the
# embedding API pads them (a strided local view); 128 x float32 is the 512 B row of the issue
CASES = ([("device", "embedding", 1001, 37, d) for d in DTYPES]
         + [("device", "embedding", 4096, 128, "float32"),
            ("device", "tensor", 1001, 37, "float32"),
            ("device", "tensor", 1001, 37, "int64"),
            ("host", "embedding", 1001, 37, "float32"),
            ("host", "embedding", 1001, 37, "int64")])


@pytest.mark.parametrize("mode", MODES)
def test_gather_rows_equal_closed_form(mode):
    results = launch(targets.check_gather_mode, (mode, CASES, 700, 11), world_size=WORLD, device="cuda",
                     timeout_s=600)
    assert len(results) == WORLD
    for rank, per_case in enumerate(results):
        assert set(per_case) == {f"{loc}/{api}/{n}x{e}/{d}" for loc, api, n, e, d in CASES}
        for key, facts in per_case.items():
            if "skipped" in facts:
                # device memory in every mode must work; host memory may be refused by the library
                assert key.startswith("host/"), f"rank {rank} {key}: {facts['skipped']}"
                warnings.warn(f"wholegraph_lib {mode} {key} skipped: {facts['skipped']}")
                continue
            assert facts["rows"] == 700
            if not facts["matches_row_partition"]:
                warnings.warn(f"wholegraph_lib {mode} {key}: library split {facts['split']} differs "
                              f"from RowPartition (ceil(N/W) = {facts['rows_per_rank']})")
    # every rank saw the same split for the same table
    for key in results[0]:
        if "split" in results[0][key]:
            assert all(r[key]["split"] == results[0][key]["split"] for r in results), key


@pytest.mark.parametrize("mode,location", [("continuous", "device"), ("chunked", "device"),
                                           ("distributed", "device"), ("continuous", "host")])
def test_sampler_draws_within_neighbor_lists(mode, location):
    fanout = 10
    results = launch(targets.check_sampler, (mode, location, 300, fanout, 400, 5), world_size=WORLD,
                     device="cuda", timeout_s=600)
    assert len(results) == WORLD
    for rank, per_dtype in enumerate(results):
        assert set(per_dtype) == {"int32", "int64"}
        for key, facts in per_dtype.items():
            if "skipped" in facts:
                assert location == "host", f"rank {rank} {key}: {facts['skipped']}"
                warnings.warn(f"wholegraph_lib sampler {mode}/{location} {key} skipped: {facts['skipped']}")
                continue
            assert facts["seeds"] == 400
            assert 0 < facts["full_lists"] < facts["seeds"], facts   # both regimes were exercised
            assert facts["sampled"] <= fanout * facts["seeds"]
