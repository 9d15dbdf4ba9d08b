"""``python -m harness data list | prepare | fetch | convert | stats | verify | table``.

The harness CLI calls :func:`add_data_subcommands` with its subparsers; each handler takes the
parsed arguments, returns an exit code and raises HarnessError on bad input.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from ..argtypes import scale as _scale
from ..errors import HarnessError
from ..timing import now


def add_data_subcommands(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``data`` and its subcommands to the harness CLI's subparsers."""
    data = subparsers.add_parser("data", help="datasets: registry, stand-ins, real data, stats")
    sub = data.add_subparsers(dest="data_command", required=True, parser_class=type(data))

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--data-root", type=Path, default=None,
                       help="where real datasets are read (default: $HARNESS_DATA_ROOT, else ./data); the "
                            "harness caches what it generates or converts in $HARNESS_CACHE_DIR, else "
                            "./data/harness_cache, never here")

    p = sub.add_parser("list", help="every dataset the papers use, and what is present locally")
    common(p)
    p.add_argument("--verify", action="store_true", help="checksum every local cache")
    p.set_defaults(handler=cmd_list)

    p = sub.add_parser("prepare", help="generate and cache a stand-in (or convert the real data)")
    p.add_argument("name")
    p.add_argument("--scale", type=_scale, default=1.0, help="1.0 = the published size")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--real", action="store_true",
                   help="convert the real dataset found under the data root instead")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N, numba, torch-cpu")
    p.add_argument("--rebuild", action="store_true", help="rebuild even if a valid cache exists")
    sym = p.add_mutually_exclusive_group()
    sym.add_argument("--symmetric", dest="symmetric", action="store_true", default=None,
                     help="store both directions (default: as the papers did)")
    sym.add_argument("--directed", dest="symmetric", action="store_false")
    p.add_argument("--feature-dtype", choices=("float32", "float16", "bfloat16"), default=None)
    p.add_argument("--id-order", choices=("blocked", "shuffled"), default="blocked",
                   help="stand-in node ids: communities contiguous (blocked) or scrambled")
    common(p)
    p.set_defaults(handler=cmd_prepare)

    p = sub.add_parser("fetch", help="download an OGB node-property dataset with ogb (network access needed) "
                                     "and convert it into the cache")
    p.add_argument("name")
    common(p)
    p.set_defaults(handler=cmd_fetch)

    p = sub.add_parser("convert", help="convert your own edge list into the cache format")
    p.add_argument("edge_list", type=Path)
    p.add_argument("--format", required=True, choices=("snap", "konect", "bin32", "bin64"))
    p.add_argument("--name", required=True,
                   help="a registry name (its real slot) or a new name for a custom dataset")
    p.add_argument("--num-nodes", type=int, default=None, help="default: largest id + 1")
    sym = p.add_mutually_exclusive_group()
    sym.add_argument("--symmetrize", dest="symmetrize", action="store_true", default=None,
                     help="store both directions (default: as the papers did; custom: no)")
    sym.add_argument("--no-symmetrize", dest="symmetrize", action="store_false")
    p.add_argument("--relabel", choices=("auto", "yes", "no"), default="auto",
                   help="compact sparse ids to 0..n-1 (auto: when ids exceed the registry's count)")
    p.add_argument("--features", type=Path, default=None, help=".npy, or raw rows with --feat-dim")
    p.add_argument("--feat-dim", type=int, default=None)
    p.add_argument("--feat-dtype", choices=("float32", "float16"), default="float32")
    p.add_argument("--labels", type=Path, default=None, help=".npy or raw int64, one per node")
    p.add_argument("--device", default="auto")
    p.add_argument("--force", action="store_true",
                   help="replace an existing conversion; convert under a registry dataset's name a graph whose node "
                        "count is not within 25%% of the registry's (it is then that dataset's real data in every run)")
    common(p)
    p.set_defaults(handler=cmd_convert)

    p = sub.add_parser("stats", help="degree distribution beside the real graph's published values")
    p.add_argument("name")
    p.add_argument("--scale", type=_scale, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--real", action="store_true", help="the real dataset (must be present)")
    p.add_argument("--direction", choices=("out", "in"), default="out")
    p.add_argument("--device", default="auto")
    common(p)
    p.set_defaults(handler=cmd_stats)

    p = sub.add_parser("verify", help="check cached datasets against the sizes and checksums of their manifests")
    p.add_argument("names", nargs="*", help="datasets to check (default: every cached one)")
    p.add_argument("--full", action="store_true",
                   help="hash every byte of every file (default: sizes, and a checksum of 64 sampled 64 KiB "
                        "blocks of each file over 4 MiB, which misses damage between the blocks)")
    common(p)
    p.set_defaults(handler=cmd_verify)

    p = sub.add_parser("table", help="a paper's dataset table: printed vs registry (vs measured)")
    p.add_argument("table_id", help="wholegraph.table2, xgnn.table3, mggcn.table1, placement.table1")
    p.add_argument("--measure", action="store_true",
                   help="add values measured from local real data or scale-1.0 stand-ins")
    common(p)
    p.set_defaults(handler=cmd_table)
    return data


# ---------------------------------------------------------------------------------------------

def _console():
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 200, highlight=False)


STAGES = {"edges": "drawing edges", "dedup": "de-duplicating", "csr": "writing CSR",
          "features": "features"}


@contextmanager
def progress_display(title: str) -> Iterator[Any]:
    """A progress callback ``(stage, fraction)``: live bars on a terminal, a line per stage
    otherwise (logs stay readable)."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    console = Console(stderr=True, highlight=False)
    started = now()
    if not console.is_terminal:
        done: set[str] = set()

        def report(stage: str, fraction: float) -> None:
            if fraction >= 1.0 and stage not in done:
                done.add(stage)
                console.print(f"{title}: {STAGES.get(stage, stage)} done "
                              f"({now() - started:.1f} s)", markup=False)

        yield report
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                  TimeElapsedColumn(), console=console, transient=False) as bars:
        tasks: dict[str, Any] = {}

        def report(stage: str, fraction: float) -> None:
            if stage not in tasks:
                tasks[stage] = bars.add_task(f"{title}: {STAGES.get(stage, stage)}", total=1.0)
            bars.update(tasks[stage], completed=min(1.0, fraction))

        yield report


def cmd_list(args) -> int:
    from rich.table import Table

    from . import cache, list_datasets, loaders

    console = _console()
    table = Table(title=f"Datasets (real data read from {cache.data_root(args.data_root)}; stand-ins and "
                        f"conversions cached in {cache.cache_root()})")
    for col in ("name", "aliases", "source", "nodes", "edges", "features", "classes", "papers",
                "local"):
        table.add_column(col, overflow="fold")
    for spec in list_datasets():
        kind = "directed" if spec.directed else "undirected"
        feats = f"{spec.feature_dim} {spec.feature_dtype}" + (" (random)" if spec.random_features else "")
        papers = "; ".join(f"{t.paper} {t.label}" for t in spec.tables) or \
            ", ".join(m.paper for m in spec.mentions)
        table.add_row(spec.name, ", ".join(spec.aliases), spec.source, f"{spec.nodes:,}",
                      f"{spec.edges:,} {kind}", feats,
                      str(spec.num_classes if spec.num_classes is not None else f"({spec.standin.num_classes})"),
                      papers, _local_summary(spec, args.data_root, args.verify, loaders, cache))
    console.print(table)
    return 0


def _local_summary(spec, root, verify, loaders, cache) -> str:
    parts = []
    entries = cache.local_entries(spec.name, root, verify=verify)
    real = [e for e in entries if e["kind"] == "real"]
    if real:
        parts.append("real: converted" + ("" if real[0]["valid"] else f" (DAMAGED: {real[0]['reason']})")
                     + ", read at --scale 1 only")
    else:
        found = loaders.find_real(spec, root)
        if found:
            parts.append(f"real: {found[0]} files, read at --scale 1 only")
    standins = sorted((e for e in entries if e["kind"] == "standin"), key=lambda e: (e["scale"], e["seed"]))
    if standins:
        labels = [f"{e['scale']:g}" + (f"/s{e['seed']}" if e["seed"] else "") +
                  ("" if e["valid"] else "!") for e in standins]
        parts.append("stand-ins: " + " ".join(labels))
    return "; ".join(parts) or "-"


def cmd_verify(args) -> int:
    """One line per cached copy (and every external file it references): ok or what is wrong.
    Exit 1 when any copy is damaged."""
    from . import cache, registry

    base = cache.cache_root()
    if args.names:
        names = [registry.get(n).name if registry.is_registered(n) else n for n in args.names]
    else:
        names = sorted({d.name for kind in ("real", "standin") if (base / kind).is_dir()
                        for d in (base / kind).iterdir() if d.is_dir() and not d.name.startswith(".")})
    how = "every byte" if args.full else "sizes + sampled checksums; --full hashes every byte"
    damaged = checked = 0
    for name in names:
        entries = cache.local_entries(name, args.data_root)
        if not entries and args.names:
            raise HarnessError(f"no cached copy of {name} under {base}")
        for entry in entries:
            ok, reason = cache.verify_cache(entry["path"], full=args.full)
            checked += 1
            damaged += not ok
            print(f"{'ok' if ok else 'FAILED'}  {entry['path']}" + ("" if ok else f": {reason}"))
    print(f"{checked} cached copies checked ({how}), {damaged} failed")
    return 1 if damaged else 0


def cmd_prepare(args) -> int:
    from . import get, prepare, prepare_real

    spec = get(args.name)
    started = now()
    with progress_display(spec.name) as report:
        if args.real:
            directory = prepare_real(spec.name, args.data_root, symmetrize=args.symmetric,
                                     device=args.device, progress=report, rebuild=args.rebuild)
        else:
            overrides = {"symmetric": args.symmetric, "feature_dtype": args.feature_dtype,
                         "id_order": args.id_order}
            directory = prepare(spec.name, args.scale, args.seed, args.data_root, device=args.device,
                                progress=report, rebuild=args.rebuild,
                                **{k: v for k, v in overrides.items() if v is not None})
    from .cache import open_graph

    graph = open_graph(directory, verify=False)
    print(graph.describe())
    print(f"cached at {directory} ({now() - started:.1f} s)")
    return 0


def cmd_fetch(args) -> int:
    from . import get, prepare_real
    from .cache import data_root
    from .ogb_api import fetch

    spec = get(args.name)
    if "ogb_dir" not in spec.real:
        raise HarnessError(f"{spec.name} is not an OGB node-property dataset; to get it: "
                           f"{spec.real.get('obtain', spec.url)}")
    folder = fetch(spec.name, data_root(args.data_root))
    print(f"{spec.name}: downloaded by ogb into {folder}")
    with progress_display(f"converting {spec.name}") as report:
        directory = prepare_real(spec.name, args.data_root, progress=report)
    print(f"{spec.name}: converted into {directory}")
    return 0


def cmd_convert(args) -> int:
    from . import cache, loaders, registry

    spec = registry.get(args.name) if registry.is_registered(args.name) else None
    name = spec.name if spec else args.name
    if not spec and ("/" in name or name.startswith(".") or not name.strip()):
        raise HarnessError(f"bad dataset name '{args.name}'")
    directory = cache.real_dir(args.data_root, name)
    if (directory / "manifest.json").exists() and not args.force:
        raise HarnessError(f"{directory} already holds a conversion of {name}; pass --force to replace it")
    def build(writer):
        meta = loaders.convert_edge_list(
            args.edge_list, args.format, writer, name=name, spec=spec, num_nodes=args.num_nodes,
            symmetrize=args.symmetrize, relabel=args.relabel, features=args.features,
            feature_dim=args.feat_dim, feature_dtype=args.feat_dtype, labels=args.labels,
            device=args.device, progress=report)
        if spec and not args.force and not _same_size(meta["num_nodes"], spec.nodes):
            raise HarnessError(f"'{args.name}' is the registry's {spec.name} ({spec.nodes:,} nodes); {args.edge_list} "
                               f"has {meta['num_nodes']:,}: converted under that name it would be read as the real "
                               f"{spec.name} by every experiment at --scale 1. Give it a name of its own, or pass "
                               "--force to mean that")
        return meta

    with progress_display(name) as report:
        cache.get_or_build(directory, build, rebuild=args.force)
    graph = cache.open_graph(directory, verify=False)
    print(graph.describe())
    print(f"cached at {directory}; load it with datasets.load('{name}')")
    if spec:
        print(f"note: {args.edge_list} ({graph.num_nodes:,} nodes) is now the real {spec.name} (registry: "
              f"{spec.nodes:,} nodes) of every run at --scale 1; `rm -r {directory}` undoes it")
    return 0


SAME_GRAPH_NODES = 0.25     # a release of a registry graph has its node count within this share


def _same_size(nodes: int, published: int) -> bool:
    """Whether a converted graph of ``nodes`` can be the registry graph of ``published`` nodes (the
    releases of one graph differ by a few percent: isolated nodes, relabelling)."""
    return abs(nodes - published) <= SAME_GRAPH_NODES * published


def cmd_stats(args) -> int:
    from rich.table import Table

    from . import get, load, stats

    spec = get(args.name)
    with progress_display(spec.name) as report:
        graph = load(spec.name, args.scale, args.seed, args.data_root, prefer_real=args.real,
                     require_real=args.real, device=args.device, progress=report)
    console = _console()
    console.print(graph.describe(), markup=False)
    table = Table(title=f"{spec.name} degrees ({args.direction}) vs. published")
    for col in ("statistic", "this graph", "stand-in target", "real (published)", "note"):
        table.add_column(col)
    rows = stats.comparison_rows(graph, spec)
    if args.direction == "in":
        measured = stats.degree_stats(graph, "in")
        for row, key in zip(rows, ("nodes", "edges", "mean", "max", "median", "p99", "isolated",
                                   "tail_exponent")):
            row["measured"] = measured[key]
    for row in rows:
        table.add_row(row["statistic"], _fmt(row["measured"]), _fmt(row["target"]),
                      _fmt(row["published"]), row.get("note", ""))
    console.print(table)
    if spec.max_degree_note:
        console.print(f"published max degree: {spec.max_degree_note}", markup=False)
    return 0


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def cmd_table(args) -> int:
    from rich.table import Table

    from . import compare_table, table_caption

    console = _console()
    rows = compare_table(args.table_id, args.data_root, measure=args.measure)
    table = Table(title=table_caption(args.table_id))
    cols = ["row", "column", "paper", "registry", "agrees"] + (["measured", "from"] if args.measure else [])
    for col in cols:
        table.add_column(col)
    for r in rows:
        cells = [r["row"], r["column"], r["paper"], r["registry"],
                 {True: "yes", False: "NO", None: "-"}[r["matches"]]]
        if args.measure:
            cells += [_fmt(r.get("measured_value")), r.get("measured_from") or "-"]
        table.add_row(*cells)
    console.print(table)
    for r in rows:
        if r["matches"] is False and r["note"]:
            console.print(f"{r['row']} {r['column']}: {r['note']}", markup=False)
    return 0
