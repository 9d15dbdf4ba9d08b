"""Where a [30,30,30] x 512 mini-batch of ours spends its time on one GPU (issue 5): kernel times
from torch.profiler (CUPTI sees the CuPy kernels too) and wall time per batch, with hash_append
(without and with the id bound, at each --max-loads) and dense_append, on the products
stand-in and on a uniform random graph of 2M nodes (the issue's PyG measurement). Not a result:
a developer's profile, printed.

    python .ci/profile_sampling.py [--device cuda] [--batches 20] [--graphs products,random]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch


def graph_of(name: str, scale: float):
    if name == "random":
        from experiments.kit.samplers import UniformGraph

        g = UniformGraph.build("uniform:2000000:50", scale, 0)
    else:
        from harness import datasets

        g = datasets.load("ogbn-products", scale=scale, seed=0, feature_dim=1)
    return g.indptr, g.indices


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--graphs", default="products,random")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--fanouts", default="30,30,30")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--max-loads", default="0.5", help="append-unique table loads to time (with id_bound)")
    args = ap.parse_args()
    from harness import registry
    from impls.sampling.minibatch import sample_blocks

    registry.discover()
    dev = torch.device(args.device)
    fanouts = [int(f) for f in args.fanouts.split(",")]
    for name in args.graphs.split(","):
        indptr, indices = graph_of(name, args.scale)
        n = indptr.size - 1
        sampler = registry.get_impl("sampling", "path_doubling").factory(dev, indptr, indices)
        loads = [float(x) for x in args.max_loads.split(",")]
        uniques = {load: registry.get_impl("unique", "hash_append").factory(dev, max_load=load) for load in loads}
        unique = uniques[loads[0]]
        gen = torch.Generator().manual_seed(0)
        seeds = [torch.randperm(n, generator=gen)[:args.batch].to(dev) for _ in range(args.batches)]

        class Unbounded:       # the sampler without id_bound: append-unique sized by its inputs
            def sample(self, *a, **k):
                return sampler.sample(*a, **k)

        sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
        dense = registry.get_impl("unique", "dense_append").factory(dev)
        variants = [("no id_bound", Unbounded(), unique)] + \
            [(f"id_bound, max_load {load:g}", sampler, uniques[load]) for load in loads[1:]] + \
            [(f"id_bound, max_load {loads[0]:g}", sampler, unique),     # the last two are profiled below
             ("dense_append", sampler, dense)]
        for i, (label, who, u) in enumerate(variants):
            def one(s, who=who, u=u):
                return sum(b.num_edges for b in sample_blocks(who, u, s, fanouts, check=False))

            for s in seeds[:3]:
                one(s)
            sync()
            times, edges = [], []
            for s in seeds:
                t0 = time.perf_counter()
                e = one(s)
                sync()
                times.append(time.perf_counter() - t0)
                edges.append(e)
            med = float(np.median(times))
            print(f"== {name} ({label}): {n} nodes, {indices.size} edges; {fanouts} x {args.batch}: median "
                  f"{med * 1e3:.3f} ms per batch, {np.mean(edges) / 1e6:.2f}M edges, "
                  f"{np.mean(edges) / med / 1e9:.2f} G edges/s")
            if dev.type != "cuda" or i < len(variants) - 2:
                continue
            from torch.profiler import ProfilerActivity, profile

            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for s in seeds[:10]:
                    one(s)
                sync()
            print(f"-- profile of {label}, 10 batches")
            print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=25, max_name_column_width=60))
        sampler.close()


if __name__ == "__main__":
    main()
