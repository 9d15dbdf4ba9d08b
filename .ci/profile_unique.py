"""Where one append-unique call spends its time on one GPU (developer profile, printed; not a result):
the frontiers of wholegraph.unique (hops 1-3 of a [30,30,30] x 512 path_doubling mini-batch), each
implementation timed as the experiment times it (L2 flushed, inputs read back, then one call
from an idle GPU: CUDA events and host wall time), the host's share (time until the call
returns with the GPU's work excluded is not separable; the profile below shows the gaps), and
one torch.profiler trace per call: every CUDA kernel and memset with its duration, in order.

    PYTHONPATH=$PWD python .ci/profile_unique.py [--datasets ogbn-products] [--hops 1,2,3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch


def frontiers(name: str, scale: float, hops, dev):
    from harness import graphs, registry
    from harness.config import RunConfig
    from harness.experiment import RunContext

    registry.discover()
    g = graphs.load(RunContext(RunConfig(device="cuda")), name, scale, "structure")
    sampler = registry.get_impl("sampling", "path_doubling").factory(dev, g.indptr, g.indices)
    sort = registry.get_impl("unique", "sort").factory(dev)
    fanouts = (30, 30, 30)       # wholegraph.unique's default
    gen = torch.Generator().manual_seed(0)
    targets = torch.from_numpy(g.train_idx)[torch.randperm(len(g.train_idx), generator=gen)[:512]].to(dev)
    out = {}
    for h in range(max(hops)):
        _, neighbors = sampler.sample(targets, fanouts[h], seed=31 + h, check=False)
        if h + 1 in hops:
            out[h + 1] = (targets, neighbors)
        targets = sort.append_unique(targets, neighbors, check=False)[0]
    return out, len(g.indptr) - 1


def host_costs(dev) -> None:
    """Host microseconds of the pieces a call is made of, on an idle GPU."""
    import numpy as np

    from impls.core import cuda
    from impls.sampling.gpu import KERNELS

    x = torch.zeros(16, dtype=torch.int64, device=dev)
    args = (cuda.ptr(x), np.int64(0), cuda.ptr(x), cuda.ptr(x), cuda.ptr(x), cuda.ptr(x))

    def per_call(f, n=2000):
        for _ in range(50):
            f()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            f()
        elapsed = time.perf_counter() - t
        torch.cuda.synchronize()
        return elapsed / n * 1e6

    print(f"host: cuda.launch {per_call(lambda: KERNELS.launch(dev, 'unique_dense.cu', 'dm_lookup', 1, 256, args)):.1f} us, "
          f"torch.empty {per_call(lambda: torch.empty(1000, dtype=torch.int64, device=dev)):.1f} us, "
          f"torch.zeros {per_call(lambda: torch.zeros(1000, dtype=torch.int64, device=dev)):.1f} us, "
          f"2-word tolist {per_call(lambda: x[:2].tolist(), 500):.1f} us (with its sync)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", default="ogbn-products:1.0,ogbn-papers100M:0.25")
    ap.add_argument("--hops", default="1,2,3")
    ap.add_argument("--impls", default="hash_append,dense_append,wholegraph_lib")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--traces", type=int, default=3, help="profiler traces of the first cases, after all timing")
    args = ap.parse_args()
    from harness import registry
    from harness.timing import CacheFlush

    dev = torch.device("cuda:0")
    torch.cuda.set_device(dev)
    flush = CacheFlush([dev])
    hops = [int(h) for h in args.hops.split(",")]
    host_costs(dev)
    cases = []
    for spec in args.datasets.split(","):
        name, scale = spec.split(":")
        fronts, bound = frontiers(name, float(scale), hops, dev)
        for hop, (targets, neighbors) in fronts.items():
            title = (f"{name} x{scale} hop {hop}: {targets.numel()} targets, {neighbors.numel()} neighbors, "
                     f"ids below {bound:,}")
            print(f"\n=== {title}")
            for impl in args.impls.split(","):
                try:
                    if impl == "wholegraph_lib":
                        from pylibwholegraph.torch.graph_ops import append_unique

                        fn = (lambda t=targets, n=neighbors:  # noqa: E731
                              append_unique(t, n, need_neighbor_raw_to_unique=True))
                    else:
                        u = registry.get_impl("unique", impl).factory(dev)
                        fn = (lambda u=u, t=targets, n=neighbors, b=bound:  # noqa: E731
                              u.append_unique(t, n, check=False, id_bound=b))
                    for _ in range(5):
                        fn()
                except Exception as exc:  # a missing library is a line, not the end of the profile
                    print(f"{impl}: {type(exc).__name__}: {exc}")
                    continue
                gpu_us, wall_us, warm_us = [], [], []
                for _ in range(args.repeats):
                    flush()
                    targets.max(), neighbors.max()
                    torch.cuda.synchronize()
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    t0 = time.perf_counter()
                    start.record()
                    fn()
                    end.record()
                    end.synchronize()
                    wall_us.append((time.perf_counter() - t0) * 1e6)
                    gpu_us.append(start.elapsed_time(end) * 1e3)
                for _ in range(args.repeats):          # no flush: what the L2 is worth
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    fn()
                    torch.cuda.synchronize()
                    warm_us.append((time.perf_counter() - t0) * 1e6)
                print(f"{impl:15} cold: events {statistics.median(gpu_us):7.1f} us, wall {statistics.median(wall_us):7.1f} us;"
                      f" warm (L2 kept): wall {statistics.median(warm_us):7.1f} us")
                cases.append((f"{title}: {impl}", fn))
    # the profiler last: once it has run, CUPTI's callbacks slow every later call down
    for title, fn in cases[:args.traces]:
        flush()
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                torch.profiler.ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        kernels.sort(key=lambda e: e.time_range.start)
        first = kernels[0].time_range.start if kernels else 0
        line = "; ".join(f"{e.name[:24]} @{e.time_range.start - first:.0f} {e.time_range.elapsed_us():.1f}us"
                         for e in kernels)
        print(f"trace {title}\n    {line}")

if __name__ == "__main__":
    main()
