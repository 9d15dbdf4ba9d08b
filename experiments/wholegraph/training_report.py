"""What the reports of WholeGraph's training experiments (Table III, IV, V; Figs. 7, 9, 11, 12) share.

- Which records a headline shows (:func:`shown_records`): per machine kind and cell, the newest run
  trained as the paper trains (:func:`paper_setting`: GPU ranks, each pipeline's default layers,
  no variant option); a CPU or toy run only where no run is at the paper's settings. Every run
  stays in the artifact's history (:func:`history`), with the options it differed by
  (:func:`variant`).
- Which machine a one-machine figure draws (:func:`figure_machine`: the most GPUs).
- What a measurement's interval is (:class:`Intervals`): the repeats' t interval where a point
  repeated its epochs; where it measured one epoch, the spread over runs of the same point at the
  same settings on the same machine kind, pooled over the points measured more than once: an upper
  bound on the noise, since runs of different commits also differ by the code's changes.
- How a bar says what it is (:func:`bar`, :func:`legend`): a system's palette colour, filled where
  measured, hatched where extrapolated from a capped epoch or only an upper bound, hollow with a
  dashed edge for the paper's value (labelled with the paper's hardware; the paper's WholeGraph
  in ours' colour, as the paper's tables name it "Ours").
"""

from __future__ import annotations

import re

from harness import registry
from harness.reportkit import TOLERANCE, Band, Claim, Estimate, finite, machine_kind, newest_per_kind
from harness.verdicts import Noise

from .training import MODEL_NAMES, SHORT, TABLE5, is_host, pipelines, short_name

PAPER_ROW = "paper (8x A100)"          # the paper's rows of a table and its series in a figure
DATASET_ORDER = {name: i for i, name in enumerate(TABLE5)}
MODEL_ORDER = {name: i for i, name in enumerate(MODEL_NAMES)}

PAPER_SETTING_KEYS = {"backend", "batch_size", "dataset", "epochs", "fanouts", "heads", "hidden", "layers",
                      "model", "scale", "synced_epochs"}       # synced_epochs: the timed-epoch rule's, no variant

# how a bar is drawn apart from a measured one: (legend text, matplotlib style)
STATES = {
    "paper": (PAPER_ROW, {"fill": False, "linestyle": "--", "linewidth": 1.4}),
    "capped": ("extrapolated from a capped epoch", {"hatch": "///", "alpha": 0.55}),
    "bound": ("upper bound (capped below whole loader waves)", {"hatch": "xxx", "alpha": 0.55}),
    "fewer": ("trained fewer mini-batches (capped epochs)", {"hatch": "///", "alpha": 0.55}),
}


# ----------------------------------------------------------------------------- which records

def in_order(order: tuple[str, ...]):
    """A sort key of pipelines: those a figure names in ``order`` (its paper's order) first, then
    every other registered one in the registry's order, then any no longer registered."""
    rest = pipelines()

    def key(impl: str) -> tuple:
        if impl in order:
            return (order.index(impl), "")
        return (len(order) + (rest.index(impl) if impl in rest else len(rest)), impl)
    return key


def pipeline_colour(impl: str) -> str:
    """A pipeline's colour: its family's (grey for one no longer registered)."""
    spec = registry.lookup("pipelines", impl)
    return (spec.plot_colour() if spec is not None else None) or "0.5"


def default_backend(rec: dict) -> bool:
    """True for a record trained with its pipeline's default layers: PyG's for pyg_host; for dgl_host
    DGL's where its build runs them, else PyG's (``default_dgl_layers``); native otherwise."""
    spec, backend = registry.lookup("pipelines", rec["key"]["impl"]), rec["key"]["backend"]
    if spec is not None and spec.has("dgl_layers"):
        return backend in ("dgl", "pyg")
    return backend == ("pyg" if spec is not None and spec.has("pyg_layers") else "native")


def variant(rec: dict) -> str:
    """The options a record was trained with beyond the paper's settings ("" for none; the host
    pipelines' batch cap is allowed, their time being extrapolated to the full epoch)."""
    extra = set(rec["params"]) - PAPER_SETTING_KEYS
    if is_host(rec["key"]["impl"]):
        extra -= {"max_batches"}
    return ", ".join(f"{k}={rec['params'][k]}" for k in sorted(extra))


def paper_setting(rec: dict) -> bool:
    """True for a GPU record trained as the paper trains (no variant option such as a layer
    implementation or an equal-steps cap on our pipeline, nor a level cheapened to fit a time budget)."""
    return rec.get("device") == "cuda" and not variant(rec) and not rec.get("fidelity")


def kind_of(rec: dict, labels: dict) -> str:
    return machine_kind(labels.get(rec["key"]["run_id"], rec["key"]["run_id"]))


def shown_records(records: list[dict], labels: dict, cell=lambda r: ()) -> tuple[list[dict], bool]:
    """The records a headline shows: for every machine kind and ``cell(record)`` (the key
    parameters beside the pipeline), the newest one at the paper's settings; where none is at the
    paper's settings, the newest of all (a CPU or toy run). The flag says which."""
    at_paper = [r for r in records if paper_setting(r)]
    newest = newest_per_kind(at_paper or records, labels, lambda r: (*cell(r), r["key"]["impl"]),
                             lambda r: r["key"]["run_id"])
    return list(newest.values()), bool(at_paper)


class Intervals:
    """The interval of a record's metric (module doc): its repeats' t interval, or for one repeat the
    run-to-run spread of that metric pooled over every point of ``records`` measured in several runs
    at the same settings on the same machine kind."""

    def __init__(self, records: list[dict], labels: dict):
        self.records, self.labels, self._noise = records, labels, {}

    def noise(self, metric: str) -> Noise | None:
        if metric not in self._noise:
            groups: dict = {}
            for r in self.records:
                v = r["metrics"].get(metric)
                if r["status"] == "ok" and finite(v) and v > 0:
                    key = (kind_of(r, self.labels), r["world"], r["key"]["impl"],
                           tuple(sorted((k, str(x)) for k, x in r["params"].items())))
                    groups.setdefault(key, []).append(v)
            self._noise[metric] = Noise.pooled(groups.values(), f"the {metric.replace('_', ' ')} of a point "
                                                                "(code changes between runs included)")
        return self._noise[metric]

    def of(self, rec: dict | None, metric: str) -> Estimate | None:
        if rec is None or rec["status"] != "ok" or not finite(v := rec["metrics"].get(metric)):
            return None
        est = Estimate.from_stats(rec.get("stats", {}).get(metric), "epochs")
        if (est is None or est.n < 2) and v > 0 and (noise := self.noise(metric)) is not None:
            return Estimate.with_noise(v, noise)
        return est


def speedup_claim(what: str, slow: dict | None, fast: dict | None, intervals: Intervals, paper: float | None,
                  metric: str = "epoch_time", band: Band | None = None) -> Claim:
    """``fast`` beats ``slow`` in ``metric``: slow / fast, within the kit's tolerance of the paper's
    ratio (None: its sign only) or in ``band``; no verdict where either epoch is only an upper bound."""
    a, b = intervals.of(slow, metric), intervals.of(fast, metric)
    effect = a.ratio(b) if a is not None and b is not None and a.value > 0 and b.value > 0 else None
    bound = [short_name(r["key"]["impl"]) for r in (slow, fast) if partial_wave(r)]
    band = band or (Band.factor(paper, TOLERANCE) if paper else Band.beyond(1.0))
    return Claim(what, effect, band, f"{paper:.3g}x" if paper else "faster",
                 runs=tuple(sorted({r["key"]["run_id"] for r in (slow, fast) if r is not None})),
                 withheld=f"{', '.join(bound)}: epoch capped below whole loader waves (an upper bound)" if bound else "")


def gpus_of(kind: str) -> int:
    """GPUs a machine kind's label says were used: '2 of 4xH200' -> 2, '4xH200' -> 4, 'cpu' -> 0."""
    m = re.match(r"(\d+) of ", kind) or re.match(r"(\d+)x", kind)
    return int(m.group(1)) if m else 0


def machine_order(kind: str) -> tuple:
    """Sort key of machine kinds: the most GPUs first."""
    return -gpus_of(kind), kind


def figure_machine(records: list[dict], labels: dict) -> str | None:
    """The machine kind a one-machine figure draws: the one with the most GPUs among the records."""
    kinds = sorted({kind_of(r, labels) for r in records}, key=machine_order)
    return kinds[0] if kinds else None


def cell_order(dataset: str, model: str) -> tuple:
    return DATASET_ORDER.get(dataset, len(DATASET_ORDER)), dataset, MODEL_ORDER.get(model, len(MODEL_ORDER)), model


def run_number(rec: dict) -> str:
    return "#" + rec["key"]["run_id"].split("_", 1)[0]


def provenance(cell: str, impls: dict) -> str:
    """'<cell>: pyg_host #0012, wholegraph #0011 (ratios across runs)': which run each pipeline's
    number of a shown cell comes from."""
    mixed = len({r["key"]["run_id"] for r in impls.values()}) > 1
    return (f"{cell}: " + ", ".join(f"{impl} {run_number(r)}" for impl, r in sorted(impls.items()))
            + (" (ratios across runs)" if mixed else ""))


def shown_caption(rep, records: list[dict], at_paper: bool, *parts: str) -> str:
    """The caption's sentences, what the headline shows, and the hardware of the runs shown."""
    what = ("Shown: the newest run per machine kind at the paper's settings (every run: the history table)."
            if at_paper else "No run at the paper's settings (GPU ranks, default options): the newest run per "
                             "machine kind (every run: the history table).")
    return rep.caption(*parts, what, runs={r["key"]["run_id"] for r in records})


def history(rep, rows: list[dict], empty: str = "no rows"):
    """Every run's rows, written apart from the headline table (``<artifact>.history.csv/.md``)."""
    return rep.table(rows, empty=empty, single=())


def dataset_title(rec: dict) -> str:
    """'papers100M (stand-in x0.04)': a panel's dataset and the scale it trained at."""
    name, scale = rec["key"]["dataset"], rec["params"].get("scale")
    standin = rec["extra"].get("epoch_time", {}).get("graph", {}).get("standin", True)
    return f"{SHORT.get(name, name)}" + (f" (stand-in x{scale:g})" if standin and scale is not None else "")


# ----------------------------------------------------------------------------- bars

def bar(ax, x: float, height, width: float, impl: str, state: str = "measured", **style):
    """One bar in ``impl``'s colour, drawn as ``state`` says (module doc); nothing for a missing value."""
    if not finite(height):
        return None
    colour = pipeline_colour(impl)
    look = {"color": colour, "edgecolor": colour, "linewidth": 0.6}
    look.update(STATES.get(state, ("", {}))[1])
    if state == "paper":
        look.pop("color")
    return ax.bar(x, height, width, **{**look, **style})


def legend(target, impls, states, *, loc="upper center", ncol: int | None = None, fontsize: float = 9, **kw):
    """A legend of the systems' colours (``impls``) and of the ``states`` drawn apart (module doc)."""
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=pipeline_colour(i), edgecolor=pipeline_colour(i), label=short_name(i))
               for i in impls]
    for state in states:
        text, style = STATES[state]
        handles.append(Patch(facecolor="none" if state == "paper" else "0.85", edgecolor="0.3", label=text,
                             **{k: v for k, v in style.items() if k in ("hatch", "linestyle", "linewidth")}))
    return target.legend(handles=handles, loc=loc, ncol=ncol or len(handles), fontsize=fontsize, frameon=False, **kw)


def cell_bars(shown: list[dict], labels: dict, impls, measured, paper, *, title: str, ylabel: str, log: bool = False,
              paper_impls=(), scale: float = 1.0, ylim=None, note: str = ""):
    """A paper table as bars, on the machine with the most GPUs among ``shown``: one panel per
    dataset, its models along the axis, a bar per pipeline (``impls``, in that order) valued
    ``measured(record) -> (value, state)``, the paper's value ``paper(dataset, model, impl)`` of
    the ``paper_impls`` beside it (``bar``'s styles, a legend of those drawn; values times ``scale``;
    ``log``: a log axis where the values drawn span more than ``LOG_SPAN``; ``note``: a second
    title line)."""
    import matplotlib.pyplot as plt

    machine = figure_machine(shown, labels)
    if machine is None:
        return None
    mine = {}
    for rec in shown:
        if kind_of(rec, labels) == machine:
            mine.setdefault(rec["key"]["dataset"], {}).setdefault(rec["key"]["model"], {})[rec["key"]["impl"]] = rec
    datasets = sorted(mine, key=lambda d: cell_order(d, "")[:2])
    present = [i for i in impls if any(i in by_impl for cells in mine.values() for by_impl in cells.values())]
    # each measured pipeline, the paper's value of its column beside it
    slots = [(impl, is_paper) for impl in impls for is_paper in (False, True)
             if (impl in paper_impls if is_paper else impl in present)]
    nrows, ncols = (1, len(datasets)) if len(datasets) <= 2 else (2, 2)
    fig, axes = plt.subplots(nrows, ncols, figsize=(10.5, 3.6 if nrows == 1 else 6.0), squeeze=False)
    width = 0.8 / len(slots)
    states, drawn_values = set(), []
    for ax, ds in zip(axes.flat, datasets):
        models = sorted(mine[ds], key=lambda m: MODEL_ORDER.get(m, len(MODEL_ORDER)))
        for x, model in enumerate(models):
            for j, (impl, is_paper) in enumerate(slots):
                rec = mine[ds][model].get(impl)
                value, state = ((paper(ds, model, impl), "paper") if is_paper else
                                measured(rec) if rec else (None, ""))
                value = value * scale if finite(value) else None
                if bar(ax, x - 0.4 + width * (j + 0.5), value, 0.88 * width, impl, state) is not None:
                    states.add(state)
                    drawn_values.append(value)
        ax.set_xticks(range(len(models)), [MODEL_NAMES.get(m, m) for m in models])
        if ylim:
            ax.set_ylim(*ylim)
        ax.set_title(dataset_title(next(iter(mine[ds][models[0]].values()))), fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
    positive = [v for v in drawn_values if v > 0]
    log = log and len(positive) > 1 and max(positive) / min(positive) > LOG_SPAN
    for ax in axes.flat:
        if log:
            ax.set_yscale("log")
    for ax in axes[:, 0]:
        ax.set_ylabel(ylabel + (" (log)" if log else ""))
    for ax in list(axes.flat)[len(datasets):]:
        ax.set_visible(False)
    drawn = [impl for impl in impls if any(i == impl for i, _ in slots)]
    states = [s for s in STATES if s in states]
    entries = len(drawn) + len(states)
    header(fig, f"{title}, {machine} (newest runs)" + (f" and {PAPER_ROW}" if "paper" in states else "")
           + (f"\n{note}" if note else ""),
           lambda y: legend(fig, drawn, states, loc="upper center", bbox_to_anchor=(0.5, y),
                            ncol=entries if entries <= 6 else (entries + 1) // 2),
           legend_rows=1 if entries <= 6 else 2)
    return fig


LOG_SPAN = 20.0                         # a bar axis goes log past this span (bars of 1% of the axis vanish)
LINE_IN = 0.25                          # inches a line of 9-12 pt text takes above the panels


def header(fig, title: str, place_legend, legend_rows: int = 1):
    """The figure's title, then its legend (``place_legend(y)``: a figure legend whose top is at
    ``y``, in figure fractions), then the panels below them."""
    height = fig.get_figheight()
    title_lines = title.count("\n") + 1
    fig.suptitle(title, fontsize=12, y=1 - 0.08 / height, va="top")
    place_legend(1 - (0.12 + LINE_IN * title_lines) / height)
    fig.tight_layout()
    fig.subplots_adjust(top=1 - (0.3 + LINE_IN * (title_lines + legend_rows) + 0.3) / height)


def epoch_state(rec: dict | None) -> str:
    """'bound', 'capped' or 'measured': how a pipeline's epoch time was obtained."""
    if rec is None:
        return "measured"
    if partial_wave(rec):
        return "bound"
    return "capped" if rec["extra"].get("epoch_time", {}).get("extrapolated") else "measured"


def partial_wave(rec: dict | None) -> bool:
    """A host pipeline's epoch extrapolated from a cap that is not a whole number of its loader's
    worker waves (what its own row says: workers, batches run and full): W workers build W batches at once,
    so a partial wave costs a whole one and the per-batch extrapolation overstates the epoch; the
    cell is then an upper bound."""
    if not rec or not is_host(rec["key"]["impl"]):
        return False
    e = rec["extra"].get("epoch_time", {})
    workers, run, full = int(e.get("workers") or 0), e.get("batches_run"), e.get("batches_full")
    return bool(e.get("extrapolated")) and workers > 1 and run is not None and run < full and run % workers != 0
