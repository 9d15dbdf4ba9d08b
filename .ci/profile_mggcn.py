"""MG-GCN with one rank against the single-GPU trainer on the same GCN (developer profile, printed;
not a result): median epoch time of single_gpu, mggcn (vertex order permuted and not), and the
top CUDA kernels of one epoch of each from torch.profiler.

    PYTHONPATH=$PWD python .ci/profile_mggcn.py [--dataset ogbn-products] [--scale 1.0] [--model 3x256]
"""

from __future__ import annotations

import argparse
import statistics

import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="ogbn-products")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--model", default="3x256")
    ap.add_argument("--epochs", type=int, default=10)
    args = ap.parse_args()
    from harness import graphs, registry
    from harness.config import RunConfig
    from harness.experiment import RunContext
    from impls.fullbatch.model import ModelConfig

    registry.discover()
    dev = torch.device("cuda:0")
    torch.cuda.set_device(dev)
    layers, hidden = (int(x) for x in args.model.split("x"))
    model = ModelConfig(layers, hidden)
    graph = graphs.load(RunContext(RunConfig(device="cuda")), args.dataset, args.scale, "fullbatch")
    variants = {
        "single_gpu": lambda: registry.get_impl("fullbatch", "single_gpu").factory(graph, model, device=dev),
        "mggcn permuted": lambda: registry.get_impl("fullbatch", "mggcn").factory(graph, model, device=dev,
                                                                                 order="random"),
        "mggcn original order": lambda: registry.get_impl("fullbatch", "mggcn").factory(graph, model, device=dev,
                                                                                       order="original"),
    }
    for name, make in variants.items():
        trainer = make()
        for _ in range(3):
            trainer.train_epoch()
        torch.cuda.synchronize()
        times = []
        for _ in range(args.epochs):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            trainer.train_epoch()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            trainer.train_epoch()
            torch.cuda.synchronize()
        print(f"\n=== {name}: {statistics.median(times):.2f} ms per epoch (min {min(times):.2f})")
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=8, max_name_column_width=50))
        del trainer
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
