"""Time and memory of generating and caching a stand-in: ``python -m harness.datasets.benchmark``.

    python -m harness.datasets.benchmark ogbn-products --scale 1.0 --device cpu
    python -m harness.datasets.benchmark ogbn-papers100M --scale 1.0 --device cuda --feature-sink null

Runs in its own process so the peak resident set size (``ru_maxrss``) is this job's alone; prints
one JSON object (wall seconds, peak RSS, peak GPU memory, per-stage seconds, counts and degree
statistics).  ``--feature-sink null`` streams features to /dev/null: it times generation on a
machine whose disk cannot hold them (papers100M's 57 GB of float32 features).  Targets (issue 3):
products at scale 1.0 in < 60 s and < 6 GiB on 2 CPU cores; papers100M at scale 1.0 in < 3 min
on one H200.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
from pathlib import Path

from ..timing import now


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.datasets.benchmark")
    parser.add_argument("name")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--cache-dir", "--data-root", dest="cache_dir", type=Path, default=None,
                        help="cache here (kept); default: a temporary directory, removed after")
    parser.add_argument("--feature-sink", choices=("cache", "null"), default="cache")
    parser.add_argument("--feature-dtype", default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the result here")
    args = parser.parse_args(argv)

    started = now()
    from . import cache
    from .backends import select_backend
    from .generators import plan_for, write_standin
    from .plan import GENERATOR_VERSION
    from .stats import degree_stats

    overrides = {"feature_dtype": args.feature_dtype} if args.feature_dtype else {}
    backend = select_backend(args.device)
    plan = plan_for(args.name, args.scale, args.seed, **overrides)
    planned = now()
    root = args.cache_dir or Path(tempfile.mkdtemp(prefix="harness-bench-"))
    os.environ["HARNESS_CACHE_DIR"] = str(root)   # this process's cache: never rebuild the shared one's copy
    directory = cache.standin_dir(None, plan.name, plan.scale, plan.seed, GENERATOR_VERSION,
                                  plan.key_digest())
    sink = Path("/dev/null") if args.feature_sink == "null" else None
    try:
        cache.get_or_build(directory, lambda w: write_standin(plan, w, backend, feature_path=sink),
                           rebuild=True)
        built = now()
        graph = cache.open_graph(directory)
        stats = degree_stats(graph)
        manifest = cache.read_manifest(directory)
    finally:
        if args.cache_dir is None:
            shutil.rmtree(root, ignore_errors=True)
    result = {
        "dataset": plan.name, "scale": plan.scale, "seed": plan.seed, "backend": backend.describe(),
        "generate_and_cache_seconds": round(built - planned, 2),
        "total_seconds_including_imports_and_plan": round(built - started, 2),
        "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3),
        "stage_seconds": manifest["generator"]["seconds"],
        "features": "written to /dev/null" if sink else f"{plan.feature_dim} x {plan.feature_dtype} cached",
        "nodes": graph.num_nodes, "stored_edges": graph.num_edges, "target_edges": plan.stored_edges,
        "draws": manifest["generator"]["draws"], "rounds": manifest["generator"]["rounds"],
        "degree": {k: stats[k] for k in ("mean", "max", "median", "p99", "isolated", "tail_exponent")},
        "target_max_degree": plan.max_degree, "target_tail_exponent": plan.gamma,
    }
    try:
        import torch

        if torch.cuda.is_available() and backend.device.startswith("cuda"):
            result["gpu"] = torch.cuda.get_device_name()
            result["gpu_peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    except ImportError:
        pass
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
