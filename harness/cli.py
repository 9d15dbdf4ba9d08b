"""``python -m harness list | run | report | compare | env | data``.

Bad input gets one clear ``error:`` line and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from .argtypes import nonneg_int as _nonneg_int
from .argtypes import positive_float as _positive_float
from .argtypes import positive_int as _positive_int
from .argtypes import scale as _scale
from .errors import HarnessError


COMPARE_EXIT_CODES = """exit codes:
  0  no regression, and every point measured (ok) in A is measured in B
  1  a regression, a time or rate of 0 or below, or a point measured in A that B skipped,
     failed or lacks (a lost point; listed, and not counted with --allow-missing)
  2  bad input (one error: line), including an A that is no baseline for B: it measured
     nothing, did not complete, or differs in hardware, experiments, implementations,
     parameters, scale, world size or quick (named; --allow-mismatch compares anyway)
  4  --reference found no complete run of B's hardware and settings under A
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage dump
        sub = self.prog.split(" ", 1)[1] if " " in self.prog else ""
        raise HarnessError(f"{message} (see `python -m harness {sub} --help`)" if sub
                           else f"{message} (see `python -m harness --help`)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="harness", description="Multi-GPU GNN training benchmark harness")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("list", help="experiments and implementations, and what can run here")
    p.add_argument("--interface", help="only implementations of this interface")
    p.add_argument("--runs", action="store_true",
                   help="list the run directories under --results instead, with their status "
                        "(complete, failed, interrupted, running, or abandoned: its process is gone; and whether "
                        "it was measured on a dirty tree)")
    p.add_argument("--results", type=Path, default=Path("results"))

    p = sub.add_parser("run", help="run experiments and store their rows")
    p.add_argument("ids", nargs="+", help="paper.artifact, bare artifact (table1), paper, or all")
    p.add_argument("--device", choices=("cpu", "cuda"), default=None,
                   help="default: cuda when a GPU is visible, else cpu")
    p.add_argument("--gpus", "--ranks", dest="world_size", type=_positive_int, default=None,
                   help="GPUs (or CPU ranks) to use; default: every visible GPU, else 2 CPU ranks (an "
                        "experiment that cannot use the count says so and exits 2)")
    p.add_argument("--scale", type=_scale, default=None,
                   help="problem size relative to the paper's (1.0 = paper size)")
    p.add_argument("--quick", action="store_true", help="fewer points and repeats, small sizes")
    p.add_argument("--impl", action="append", default=[],
                   help="only these implementations (repeatable, comma-separated, shell patterns)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="experiment parameter override (repeatable)")
    p.add_argument("--warmup", type=_nonneg_int, default=None)
    p.add_argument("--repeats", type=_positive_int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("runs"),
                   help="root of run directories (default ./runs, left out of git; `harness promote RUN` "
                        "adds a run to the committed references under results/)")
    p.add_argument("--label", help="run directory label (default: hardware and experiment ids)")
    p.add_argument("--timeout", type=_positive_float, default=3600.0,
                   help="seconds a rank may spend in one point (default 3600): a rank still in it after that "
                        "stops the launch, the point is an error row naming the rank(s) that did not finish")
    p.add_argument("--data-root", type=Path, default=None, help="where real datasets live")
    p.add_argument("--no-report", action="store_true", help="do not render the run's report")
    p.add_argument("--launch-per-point", action="store_true",
                   help="start fresh rank processes for every point of a multi-rank experiment (default: one "
                        "launch per GPU count), so no point inherits the state an earlier one left in the process")
    p.add_argument("--dry-run", action="store_true",
                   help="print the points that would run, what each needs, whether it can run here and how long "
                        "it should take (from stored runs), and run nothing")
    p.add_argument("--time-budget", metavar="DURATION", default=None,
                   help="end within this time (90s, 20m, 1.5h), the report included: every point measured first "
                        "at the cheapest fidelity the budget needs (fewer repeats, one epoch, capped host epochs; "
                        "rows say so in 'fidelity'), then refined while time remains")
    p.add_argument("--resume", metavar="RUN_DIR", type=Path, default=None,
                   help="append to RUN_DIR only the points it lacks (never reached, failed, or measured at reduced "
                        "fidelity), on the same hardware with the same settings; with --time-budget, a campaign "
                        "completes over several sittings")

    p = sub.add_parser("report", help="regenerate tables and figures from stored runs")
    p.add_argument("runs", nargs="*", type=Path, help="run directories")
    p.add_argument("--all", action="store_true",
                   help="every run under --results, one report per experiment, and the reports index")
    p.add_argument("--results", type=Path, default=Path("results"), help="the reference runs --all reads")
    p.add_argument("--out", type=Path, default=None,
                   help="where to write (default: reports/ with --all; beside the runs otherwise: "
                        "RUN/report for one run, report/ in their folder for several)")
    p.add_argument("--experiment", action="append", default=None, help="only these experiment ids")

    p = sub.add_parser("compare", help="compare two result sets; exit 1 on a regression or a lost point",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=COMPARE_EXIT_CODES)
    p.add_argument("a", type=Path, help="baseline run directory (or a folder of runs)")
    p.add_argument("b", type=Path, nargs="?", help="candidate run directory (or a folder of runs)")
    p.add_argument("--reference", action="store_true",
                   help="A is a result root: compare B with A's newest complete run of the same hardware "
                        "and settings (experiments, implementations, parameters, scale, world size, quick)")
    p.add_argument("--threshold", type=float, default=0.10,
                   help="relative change counted as a regression (default 0.10)")
    p.add_argument("--allow-missing", action="store_true",
                   help="list points measured in A that B skipped, failed or lacks, without failing")
    p.add_argument("--allow-mismatch", action="store_true",
                   help="compare runs of different settings (hardware, parameters, ...), saying which differ")

    p = sub.add_parser("promote", aliases=["import"],
                       help="add complete runs of committed code (yours, or fetched from a GPU machine) to the "
                            "reference runs under results/, renumbered")
    p.add_argument("runs", nargs="+", type=Path, help="run directories")
    p.add_argument("--out", type=Path, default=Path("results"), help="the reference store")
    p.add_argument("--keep-failed-as-record", action="store_true",
                   help="promote a failed, interrupted or abandoned run as a record: listed by `report --all`, "
                        "in no table or headline")

    p = sub.add_parser("withdraw", help="mark a stored run as withdrawn: kept, left out of reports")
    p.add_argument("run", type=Path, help="run directory under results/")
    p.add_argument("--reason", required=True, help="why (the defect that made its numbers wrong)")
    p.add_argument("--superseded-by", type=Path, default=None, metavar="RUN",
                   help="the complete run of committed code under results/ that now covers its points")
    p.add_argument("--results", type=Path, default=Path("results"), help="the reference store it must be under")

    p = sub.add_parser("bench", help="regression check: the base revision and this tree, interleaved in one job",
                       description="Run tests/benchmarks against the base revision (checked out in a temporary "
                                   "git worktree, or --base-tree) and this tree in alternating rounds; exit 1 on a "
                                   "regression (see harness/bench.py for the rule).")
    p.add_argument("action", choices=("check",))
    p.add_argument("--base", help="the revision to compare with (default: the merge base of HEAD with main or "
                                  "origin/main; on main, its first parent); $HARNESS_BENCH_BASE also sets it")
    p.add_argument("--base-tree", type=Path, default=None,
                   help="a copy of the base's files to measure instead of a git revision (no git needed)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cpu: the benchmarks not marked gpu (threshold 1.25); cuda: the gpu-marked ones, the "
                        "GPU hot paths (threshold 1.10)")
    p.add_argument("--rounds", type=_positive_int, default=None, help="rounds per side (default 5)")
    p.add_argument("--threshold", type=float, default=None,
                   help="median slowdown counted as a regression when also significant (default: the device's)")
    p.add_argument("--alpha", type=float, default=None, help="significance level (default 0.05)")
    p.add_argument("-k", dest="select", help="only benchmarks matching this pytest -k expression")
    p.add_argument("--json", type=Path, default=None, help="also write the verdict and every round's times here")

    sub.add_parser("env", help="GPUs, topology, versions, and which implementations can run")

    try:
        from .datasets.cli import add_data_subcommands
    except ImportError:
        add_data_subcommands = None
    if add_data_subcommands is not None:
        add_data_subcommands(sub)
    return parser


def _split_patterns(items: list[str]) -> tuple[str, ...]:
    return tuple(x.strip() for item in items for x in item.split(",") if x.strip())


def cmd_list(args) -> int:
    from rich.console import Console
    from rich.table import Table

    from . import registry
    from .needs import detect

    console = Console(width=None if sys.stdout.isatty() else 160)
    if args.runs:
        console.print(_runs_table(args.results))
        return 0
    t = Table(title="Experiments", show_lines=False)
    for col in ("id", "paper", "artifact", "title"):
        t.add_column(col)
    for exp in registry.experiments():
        t.add_row(exp.id, exp.paper, exp.artifact, exp.title)
    console.print(t)
    caps = detect()
    device = "cuda" if caps.cuda else "cpu"
    t = Table(title=f"Implementations (can run here: judged for --device {device} from the packages installed; "
                    "`harness env` also imports them)")
    for col in ("interface", "name", "label (family): variants", "needs", "here", "what it is"):
        t.add_column(col)
    for spec in registry.impl_specs(args.interface):
        reason = spec.needs.unmet(caps, None if device == "cuda" else device, imported=False)
        if reason and device == "cpu" and spec.needs.devices == ("cuda",):
            reason = "needs CUDA, and no CUDA GPU is visible"
        t.add_row(spec.interface, spec.name, _series_cell(spec), spec.needs.describe(),
                  "yes" if not reason else f"no: {reason}", spec.what())
    console.print(t)
    return 0


def _series_cell(spec) -> str:
    """An implementation's label and family, and its variants where it has several."""
    variants = [v.name for v in spec.variants if v.name]
    return f"{spec.title} ({spec.family})" + (f": {', '.join(variants)}" if variants else "")


def _runs_table(root: Path):
    import json

    from rich.table import Table

    from .store import _RUN_DIR, git_of, run_status, withdrawn_reason

    if not root.is_dir():
        raise HarnessError(f"no result root at {root}")
    t = Table(title=f"Runs under {root}")
    for col in ("run", "status", "ok", "skipped", "error", "started", "experiments"):
        t.add_column(col)
    for path in sorted(p for p in root.iterdir() if _RUN_DIR.match(p.name) and (p / "manifest.json").exists()):
        try:
            m = json.loads((path / "manifest.json").read_text())
        except (OSError, ValueError):
            t.add_row(path.name, "unreadable manifest", "", "", "", "", "")
            continue
        counts = m.get("counts") or {}
        dirty = {True: " (dirty tree)", None: " (tree state unknown)"}.get(git_of(m).get("dirty"), "")
        withdrawn = ", withdrawn" if withdrawn_reason(path) else ""
        t.add_row(path.name, run_status(m) + dirty + withdrawn, *(str(counts.get(k, "-")) for k in ("ok", "skipped", "error")),
                  str(m.get("start", "-")), ", ".join(m.get("experiments", [])))
    return t


def _interrupt(signum, frame):
    from .errors import Terminated

    raise Terminated


def cmd_run(args) -> int:
    from .registry import check_ids

    check_ids(args.ids)           # an unknown id fails here, before the experiments (and torch) are imported
    from . import budget, runner
    from .config import RunConfig, parse_param_assignments
    from .needs import default_device
    from .plan import parse_duration, render

    cfg = RunConfig(
        device=args.device or default_device(), world_size=args.world_size, scale=args.scale,
        quick=args.quick, warmup=args.warmup, repeats=args.repeats,
        impl_patterns=_split_patterns(args.impl), params=parse_param_assignments(args.param),
        seed=args.seed, out_dir=args.out, label=args.label, timeout_s=args.timeout,
        data_root=args.data_root, launch_per_point=args.launch_per_point,
        time_budget_s=parse_duration(args.time_budget) if args.time_budget is not None else None,
        # a budget counts from the command's start, the interpreter's start-up included
        started_at=budget.command_start() if args.time_budget is not None else None,
    )
    if args.dry_run:
        run_plan = runner.make_plan(args.ids, cfg, resume=args.resume)
        print(render(run_plan, cfg), end="")
        for line in runner.data_lines(runner.data_sources([(e.exp, e.point) for e in run_plan.entries], cfg)):
            print(line)
        return 0
    signal.signal(signal.SIGTERM, _interrupt)   # `kill` ends a run as Ctrl-C does: rows kept, ranks stopped, exit 143
    outcome = runner.run(args.ids, cfg, [Path(sys.argv[0]).name] + sys.argv[1:], resume=args.resume)
    if outcome.store is None:  # a torchrun rank other than 0: rank 0 reports
        return 0
    print(f"run {outcome.store.run_id}: {outcome.ok} ok, {outcome.skipped} skipped, "
          f"{outcome.errors} errors -> {outcome.store.path}")
    _print_run_end(outcome, args.no_report)
    if outcome.budget is not None:
        print(f"time budget {outcome.budget.text}: took {outcome.budget.took():.0f} s"
              + ("; it ended before every point was measured at full fidelity" if outcome.budget_ended else ""))
    return 1 if outcome.errors else 0


def _print_run_end(outcome, no_report: bool) -> None:
    """Where the run's rows and report are, and one line per artifact: its status as the reports
    index computes it, and its headline (the tables stay in the report's files)."""
    from .report import artifact_status, report_runs
    from .runner import skip_summary
    from .store import load_run

    path = outcome.store.path
    artifacts: dict = {}
    unwritten: list[str] = []
    budget = outcome.budget
    rows = load_run(path).rows
    if not no_report and rows:
        report_runs([path], path / "report", artifacts=artifacts,
                    stop=budget.over if budget is not None else None, unwritten=unwritten)
    print(f"rows: {path / 'rows.jsonl'} ({len(rows)} rows)")
    if no_report:
        print("report: not written (--no-report); `python -m harness report " + str(path) + "` writes it")
    elif not rows:
        print("report: not written (the run stored no row)")
    else:
        print(f"report: {path / 'report'}")
        for exp_id, (artifact, _, exp_rows) in sorted(artifacts.items()):
            where = path / "report" / exp_id.split(".", 1)[0] / f"{artifact.name}.md"
            headline = artifact.headline or (artifact.notes[0] if artifact.notes else "")
            headline = " ".join(headline.split())
            print(f"  {exp_id}: {artifact_status(artifact, exp_rows)}"
                  + (f": {headline[:160]}{'...' if len(headline) > 160 else ''}" if headline else "")
                  + f" ({where})")
        if unwritten:
            print(f"  not written, the time budget having ended: {', '.join(unwritten)} "
                  f"(`python -m harness report {path}` writes them)")
    summary = skip_summary(rows)
    if summary:
        print(summary)


def cmd_report(args) -> int:
    import json

    from .artifact import ABANDONED_NOTE
    from .report import report_all, report_runs
    from .store import run_status

    if args.all:
        if args.runs:
            raise HarnessError("report --all takes no run directories (it reads --results)")
        # references only (the index lists the rest); the default layout puts the table of each
        # artifact's newest reference per machine beside the other docs
        written = report_all(args.results, args.out or Path("reports"),
                             references=None if args.out else Path("docs/references.md"))
    else:
        for path in map(Path, args.runs):
            try:
                manifest = json.loads((path / "manifest.json").read_text())
            except (OSError, ValueError):
                continue        # reading the run names the problem
            if run_status(manifest) == "abandoned":
                print(f"warning: {path.name} is {ABANDONED_NOTE}", file=sys.stderr)
        written = report_runs(args.runs, args.out or default_report_dir(args.runs), args.experiment)
    for path in written:
        print(path)
    return 0


def default_report_dir(runs: list[Path]) -> Path:
    """Beside the runs: a user's report never lands in the repository's reports/ by accident."""
    if len(runs) == 1:
        return Path(runs[0]) / "report"
    parents = {Path(r).resolve().parent for r in runs}
    return (parents.pop() if len(parents) == 1 else Path.cwd()) / "report"


def cmd_compare(args) -> int:
    from .compare import check_baseline, compare_sets, find_reference, format_comparison, load_runs, rows_by_point

    if args.b is None:
        raise HarnessError("compare takes A and B")
    a = args.a
    if args.reference:
        a = find_reference(args.a, args.b)
        print(f"reference: {a}")
    a_runs, b_runs = load_runs(a), load_runs(args.b)
    differences = check_baseline(a_runs, b_runs, allow_mismatch=args.allow_mismatch)
    for line in differences:
        print(f"settings differ (--allow-mismatch): {line}")
    result = compare_sets(rows_by_point(a_runs), rows_by_point(b_runs), args.threshold)
    print(format_comparison(result))
    if result.lost and args.allow_missing:
        print(f"{len(result.lost)} lost points allowed (--allow-missing)")
    return 1 if result.failed or (result.lost and not args.allow_missing) else 0


def cmd_import(args) -> int:
    from .store import import_run

    for src in args.runs:
        store = import_run(src, args.out, keep_failed_as_record=args.keep_failed_as_record)
        record = store.read_manifest().get("record")
        print(f"{src} -> {store.path}" + (f" (a record: {record})" if record else ""))
    return 0


def cmd_withdraw(args) -> int:
    from .store import withdraw_run

    results = args.results.resolve()
    for path in [args.run] + ([args.superseded_by] if args.superseded_by else []):
        if Path(path).resolve().parent != results:
            raise HarnessError(f"{path} is not a run directory under {args.results}/: only committed reference "
                               "runs are withdrawn (a run of your own is simply deleted)")
    marker = withdraw_run(args.run, args.reason, args.superseded_by)
    print(f"withdrawn: {marker}")
    return 0


def cmd_bench(args) -> int:
    import json

    from . import bench

    result = bench.check(
        base=args.base or os.environ.get("HARNESS_BENCH_BASE") or None, base_tree=args.base_tree,
        device=args.device, rounds=args.rounds or bench.DEFAULT_ROUNDS, threshold=args.threshold,
        alpha=args.alpha or bench.DEFAULT_ALPHA, select=args.select,
        progress=lambda line: print(f"bench check: {line}", file=sys.stderr, flush=True))
    print("\n".join(result.lines))
    if args.json:
        args.json.write_text(json.dumps(result.to_dict(), indent=1) + "\n")
    return 0 if result.passed else 1


def cmd_env(args) -> int:
    from . import dgl_compat, envinfo, registry
    from .needs import detect

    gpus = envinfo.gpu_info()
    sw = envinfo.software()
    print(f"harness {sw['harness']}  python {sw['python']}  {sw['platform']}")
    print(f"torch {sw.get('torch')}  CUDA {sw.get('cuda')}  NCCL {sw.get('nccl')}  "
          f"driver {gpus.get('driver')}")
    host = envinfo.host_info()
    print(f"host: {host.get('cpu_model', '?')}, {host.get('cpu_count')} cores, "
          f"{host.get('memory_bytes', 0) / 2**30:.0f} GiB")
    if gpus["count"]:
        for d in gpus["devices"]:
            print(f"GPU{d['index']}: {d['name']}, {d['memory_bytes'] / 2**30:.0f} GiB, "
                  f"sm_{d['capability'].replace('.', '')}, {d['multiprocessors']} SMs")
        topo = gpus.get("topology")
        if topo:
            print("topology:")
            print("       " + " ".join(f"{g:>6}" for g in topo["gpus"]))
            for name, row in zip(topo["gpus"], topo["matrix"]):
                print(f"{name:>6} " + " ".join(f"{c:>6}" for c in row))
    else:
        print("GPUs: none visible (CPU ranks with gloo and host shared memory)")
    print("packages: " + ", ".join(f"{k} {v}" for k, v in sorted(sw["packages"].items())))
    dgl = dgl_compat.status()
    if dgl:
        print(f"dgl: {dgl}")
    caps = detect()
    device = "cuda" if caps.cuda else "cpu"
    print(f"\nimplementations (device {device}):")
    for spec in registry.impl_specs():
        reason = spec.needs.unmet(caps, None if device == "cuda" else device)
        print(f"  {spec.key:32} {'yes' if not reason else 'no: ' + reason}")
    return 0


COMMANDS = {"list": cmd_list, "run": cmd_run, "report": cmd_report, "compare": cmd_compare,
            "env": cmd_env, "promote": cmd_import, "import": cmd_import, "bench": cmd_bench,
            "withdraw": cmd_withdraw}


VALUE_OPTIONS = ("--time-budget", "--timeout", "--scale", "--seed", "--repeats", "--warmup", "--gpus", "--ranks")


def _join_dashed_values(argv: list[str]) -> list[str]:
    """``--time-budget -5m`` as ``--time-budget=-5m``: argparse reads a value that starts with '-'
    as an option ("expected one argument"), where the option's own check says what is wrong."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] in VALUE_OPTIONS and i + 1 < len(argv) and argv[i + 1].startswith("-") \
                and not argv[i + 1].startswith("--"):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def _one_line_warning(message, category, filename, lineno, file=None, line=None):
    print(f"warning: {message}", file=sys.stderr if file is None else file)


def main(argv: list[str] | None = None) -> int:
    import warnings

    argv = _join_dashed_values(sys.argv[1:] if argv is None else argv)
    shown = warnings.showwarning
    warnings.showwarning = _one_line_warning     # what reading a damaged run dropped, on one line
    try:
        return _main(argv)
    finally:
        warnings.showwarning = shown


def _main(argv: list[str]) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        handler = COMMANDS.get(args.command) or getattr(args, "handler", None)
        if handler is None:
            raise HarnessError(f"unknown command '{args.command}'")
        return int(handler(args) or 0)
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        code = getattr(exc, "exit_code", 130)
        print("terminated" if code == 128 + signal.SIGTERM else "interrupted", file=sys.stderr)
        return code
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
