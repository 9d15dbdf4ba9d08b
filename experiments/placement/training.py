"""ICS'22 Figs. 7, 8, 9, 12: training loss with and without locality-aware sampling (LAS).

A small GraphSAGE-mean model in torch (on the GPU with --device cuda, else the CPU), trained
data-parallel the way ICS'22 trains (Sec. 5.1: three layers, layer-wise sampling, Adam, learning
rate proportional to the number of GPUs n; the paper's 0.01 n is too large for the toy model, see
``lr_per_gpu``): each step every simulated GPU samples its own mini-batch (with LAS boosting the
nodes it can read from GPU buffers: its own and its NVLink neighbors'), the per-GPU losses are
averaged (what gradient averaging does) and one optimizer step follows. PaGraph trains each GPU on
its own partition's training nodes (local shuffling), where the paper has its curve.

Why the earlier curves sat at chance (issue 34): aggregation used Eq. 1's unbiased weights
1 / (deg_i q_j), and with the few neighbours a scaled layer leaves each target (often one, at
q = 0.04, weighing it 25 / deg) their variance drowned the planted signal, which on the stand-ins
lives in the neighbourhoods (their features alone: 3% accuracy for an MLP on yelp's); evaluation
also sampled 2x the layer for 256 seeds at once, sparser than training. Now the model trains on the
ratio form of Eq. 1 (``estimator``; sampling.ratio_weights: still dividing by q, so LAS stays
corrected) and is scored by exact inference with full neighbour means; multi-hot labels (the real
yelp) train with binary cross-entropy and score micro-F1. Each curve records its chance loss (the
entropy of the training labels), drawn on the figure; the LAS comparison is reported only where
both curves end below TRAINED_SHARE of it.

The rows hold the final training loss, the mean share of input reads that went to the host, the
mean modeled loading time (Eq. 3) and the test score; the per-epoch curves (loss, host share,
loading time, s) and the regime (steps, batch, lr, estimator, chance) travel in the train_loss row's
``extra``. ``las_scale`` is MAXS = 8 by default (the largest s Algorithm 2 may reach, the worst case
for convergence the paper accepts); ``adaptive`` runs Algorithm 2 with r = modeled loading /
(modeled loading + measured compute) of the previous epoch.
"""

from __future__ import annotations

import contextlib

import numpy as np

from harness import registry
from harness.argtypes import BadValue, choice, or_word, positive_float, positive_int, str_list
from harness.artifact import ReportArtifact
from harness.errors import HarnessError, SkipPoint
from harness.experiment import Experiment, Measurement, PaperValue, Param, Point
from harness.reportkit import Report, figure
from harness.timing import now
from harness.worlds import Worlds

from ..kit import training as kit
from . import PALETTE, PAPER_HARDWARE
from .common import cost_model, policy_options, scaled, time_cap, workbench
from .paper import (LAS_LT, LAS_MAXS, LAS_UT, NUM_LAYERS, PAPER_LAYER_NODES, PAPER_Q_SIZE, POLICY_ORDER, paper_alpha,
                    policy_colour, policy_label)
from .shown import SMOKE_NOTE, shown_rows


def las_factor(text: str) -> float:
    value = positive_float(text)
    if value < 1:
        raise BadValue("las_scale must be >= 1 or 'adaptive'")
    return value


las_scale_param = or_word("adaptive", las_factor)


@contextlib.contextmanager
def one_torch_thread():
    """The toy model's matrices are tiny: one intra-op thread avoids worker threads spinning
    against each other (and against other jobs) on a busy machine."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def build_model(in_dim: int, hidden: int, classes: int, layers: int, seed: int):
    import torch

    class SageMean(torch.nn.Module):
        """GraphSAGE with mean aggregation: h_i' = W_self h_i + W_neigh mean_j h_j."""

        def __init__(self):
            super().__init__()
            dims = [in_dim] + [hidden] * (layers - 1) + [classes]
            self.self_lin = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
            self.neigh_lin = torch.nn.ModuleList(torch.nn.Linear(a, b, bias=False) for a, b in zip(dims, dims[1:]))

        def forward(self, x, blocks, matrices=None):
            """Over sampled layers (output side first, as the sampler returns them), each edge
            weighted by its block's ``weight``; ``matrices``: the blocks' ``block_matrix``, input
            layer first, where the caller built them already (a timed step that must not copy them)."""
            h = x
            for depth, block in enumerate(reversed(blocks)):       # input layer first
                adjacency = matrices[depth] if matrices is not None else block_matrix(block, h)
                h = self.layer(depth, h[:len(block.dst)], adjacency @ h)
            return h

        def full_forward(self, x, adjacency):
            """Every node with its exact neighbour mean (``adjacency``: the row-normalized sparse
            matrix), layer by layer over the whole graph: inference without sampling noise."""
            h = x
            for depth in range(len(self.self_lin)):
                h = self.layer(depth, h, adjacency @ h)
            return h

        def layer(self, depth, h, agg):
            out = self.self_lin[depth](h) + self.neigh_lin[depth](agg)
            return torch.relu(out) if depth < len(self.self_lin) - 1 else out

    torch.manual_seed(seed)
    return SageMean()


def block_matrix(block, like):
    """A sampled layer's weighted edges as a sparse (dst x src) CSR matrix on ``like``'s device
    (a sparse product is an order of magnitude faster than index_add_ on the CPU)."""
    import warnings

    import torch

    order = np.argsort(block.edge_dst, kind="stable")
    indptr = np.zeros(len(block.dst) + 1, dtype=np.int64)
    np.cumsum(np.bincount(block.edge_dst, minlength=len(block.dst)), out=indptr[1:])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)          # "sparse CSR support is in beta"
        return torch.sparse_csr_tensor(torch.from_numpy(indptr), torch.from_numpy(block.edge_src[order].astype(np.int64)),
                                       torch.from_numpy(block.weight[order].astype(np.float32)),
                                       size=(len(block.dst), len(block.src))).to(like.device, like.dtype)


class Objective:
    """What the model is trained on and scored by: cross-entropy and accuracy over single labels,
    or (a multi-hot label matrix, as the real yelp's) binary cross-entropy per label and micro-F1,
    GraphSAINT's and the paper's yelp metric. ``chance`` is the loss of the best constant
    prediction (the training labels' frequencies): ln C for C balanced classes."""

    def __init__(self, labels: np.ndarray):
        self.multilabel = labels.ndim == 2
        self.classes = int(labels.shape[1]) if self.multilabel else int(labels.max()) + 1

    def labelled(self, labels: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """The nodes of ``nodes`` that carry a label (a single label of -1 marks none)."""
        return nodes if self.multilabel else nodes[labels[nodes] >= 0]

    def loss(self, logits, target):
        import torch

        if self.multilabel:
            return torch.nn.functional.binary_cross_entropy_with_logits(logits, target.to(logits.dtype))
        return torch.nn.functional.cross_entropy(logits, target)

    def chance(self, labels: np.ndarray) -> float:
        if self.multilabel:
            p = np.clip(np.asarray(labels, dtype=np.float64).mean(axis=0), 1e-12, 1 - 1e-12)
            return float(np.mean(-(p * np.log(p) + (1 - p) * np.log(1 - p))))
        p = np.bincount(labels, minlength=self.classes) / max(1, len(labels))
        p = p[p > 0]
        return float(-(p * np.log(p)).sum())

    def score(self, logits, target) -> float:
        if self.multilabel:
            pred = logits > 0
            truth = target > 0
            tp = int((pred & truth).sum())
            return 2 * tp / max(1, int(pred.sum()) + int(truth.sum()))
        return float((logits.argmax(dim=1) == target).float().mean())

    @property
    def metric(self) -> str:
        return "micro-F1" if self.multilabel else "accuracy"


METHODS = ("our", "our+las", "pg")   # Our placement, with LAS, PaGraph (where the paper trains it)
TRAINED_SHARE = 0.7        # a final loss above this share of chance: the model did not learn, nothing to compare
PAPER_SCORE_SHARE = 0.5    # a test score under this share of the paper's: not the paper's regime (it memorized)


def chance_of(row, dataset: str) -> float | None:
    """A train_loss row's chance loss: recorded by the run, else ln C from the dataset's class count
    (rows older than the record)."""
    import math

    extra = row.get("p_chance_loss") if hasattr(row, "get") else None
    if extra is not None and extra == extra:
        return float(extra)
    from harness import datasets

    classes = datasets.get(dataset).num_classes
    return math.log(classes) if classes else None


class LossExperiment(Experiment):
    """Training loss per epoch on ``dataset``, Our placement with and without LAS (and PaGraph's
    local shuffling) over the simulated GPUs of ``topologies`` (where the paper applies LAS); the
    paper gives the curves and the test accuracy of the LAS-trained model (``paper_values``)."""

    interface = "placement"
    impls = ("clique_opt", "pagraph")
    metric, unit, better = "train_loss", "", "lower"
    worlds = Worlds(fixed=(1,))
    dataset = ""
    quick_scale = 0.02
    full_scale = 0.1
    topologies = ("2GPU", "(2+2)GPU")
    paper_accuracy: tuple[str, float, float] = ("", 0.0, 0.0)    # (section, test accuracy, its +/-) of LAS
    # what a run must leave at its default to be at the paper's settings (experiments/placement/shown.py)
    method_params = ("epochs", "buffer_fraction", "las_scale", "hidden", "lr_per_gpu", "batch_size", "estimator",
                     "max_steps", "feature_signal")
    feature_signal: float | None = None      # None: the catalog's planted signal
    quick_epochs = 5
    pagraph = True            # the paper trains PaGraph too (Figs. 7-9; not on MAG240M, which it cannot partition)

    @property
    def paper_values(self) -> tuple[PaperValue, ...]:
        section, accuracy, spread = self.paper_accuracy
        return (PaperValue(f"{section} ({self.figure})", "clique_opt", {"las": True}, "test_accuracy", accuracy, "",
                           f"(+/- {spread})"),) if section else ()

    @property
    def differs_from_paper(self) -> str:
        return (f"A small GraphSAGE-mean (64 hidden units, not the paper's 512) trained in one process (on the GPU "
                f"with --device cuda, else the CPU) over a {self.dataset} stand-in a fraction of the real size, with "
                "the GPUs simulated (data-parallel loss averaging, Eq. 3 for loading), not on the paper's 8x V100; "
                "neighbour means by the ratio form of Eq. 1; PaGraph's local shuffling is re-implemented.")

    @property
    def paper_score(self) -> float | None:
        """The paper's test accuracy of the LAS-trained model (its regime), or None."""
        return self.paper_accuracy[1] if self.paper_accuracy[0] else None

    @property
    def figure(self) -> str:
        """'Fig. 7' of artifact 'fig7'."""
        return "Fig. " + self.artifact.removeprefix("fig")

    @property
    def title(self) -> str:
        return f"ICS'22 {self.figure}: training losses on {self.dataset} with and without LAS"

    @property
    def figure_caption(self) -> str:
        return f"ICS'22 {self.figure} ({self.dataset})."

    @property
    def parameters(self):
        return {
            "topologies": Param(self.topologies, str_list, "ICS'22 configurations (LAS was used on these)"),
            "methods": Param(METHODS, str_list, "curves to train: " + ", ".join(METHODS)
                             + " (one per process lets a machine train the curves in parallel)"),
            "epochs": Param(30, positive_int, "epochs (paper: 30)"),
            "buffer_fraction": Param(0.1, positive_float, "feature buffer per GPU as a fraction of N"),
            "las_scale": Param(LAS_MAXS, las_scale_param, "s for LAS: a number, or 'adaptive' (Algorithm 2)"),
            "hidden": Param(64, positive_int, "hidden units (paper: 512)"),
            "lr_per_gpu": Param(0.0025, positive_float, "Adam learning rate per GPU: lr = lr_per_gpu x n "
                                "(paper: 0.01 n with batches of 512-2048 and 512 hidden units; the toy "
                                "model's scaled-down batches diverge at 0.01)"),
            "batch_size": Param(None, positive_int, "training nodes per GPU and step (default: paper's, scaled)"),
            "feature_signal": Param(self.feature_signal, positive_float,
                                    "the stand-in's planted class-centroid norm (default: the dataset catalog's, "
                                    "unless the figure needs features a sampled model can learn from; see Fig. 12)"),
            "estimator": Param("ratio", choice("ratio", "unbiased"),
                               "neighbour-mean estimate the model trains on: 'ratio' (Eq. 1's weights over their sum "
                               "per target; impls/placement/sampling.py ratio_weights) or 'unbiased' (Eq. 1 as "
                               "written: at the stand-ins' layer sizes its variance keeps the model at chance)"),
            "eval_nodes": Param(None, positive_int, "test nodes scored at the end (default: every test node)"),
            "max_steps": Param(None, positive_int, "cap on steps per epoch"),
            "pagraph_cap_s": Param(120.0, positive_float, "PaGraph partitioning time cap (s)"),
        }

    def default_scale(self, cfg, dataset=None) -> float:
        return self.quick_scale if cfg.quick else self.full_scale

    def points(self, cfg):
        scale = self.scale(cfg)
        methods = self.param(cfg, "methods")
        unknown = sorted(set(methods) - set(METHODS))
        if unknown:
            raise HarnessError(f"unknown method {', '.join(unknown)} (known: {', '.join(METHODS)})")
        for topology in self.param(cfg, "topologies"):
            base = {"dataset": self.dataset, "scale": scale, "topology": topology,
                    "buffer_fraction": self.param(cfg, "buffer_fraction")}
            for impl in registry.names("placement", traits=("ics22",)):
                if "our" in methods:
                    yield Point(impl, {**base, "las": False})
                if "our+las" in methods:
                    yield Point(impl, {**base, "las": True})
            for impl in registry.names("placement", family="PaGraph") if self.pagraph and "pg" in methods else ():
                yield Point(impl, {**base, "las": False})

    def run_point(self, point: Point, ctx) -> list[Measurement]:
        cfg = ctx.cfg
        trainer = LossTrainer(self, point, ctx)
        epochs = self.param(cfg, "epochs") if not cfg.quick else min(self.param(cfg, "epochs"), self.quick_epochs)
        with one_torch_thread():
            trained = kit.run_epochs(trainer, None, point.label(), epochs, evaluate="never", lifetime=kit.no_lifetime(),
                                     finish=lambda t: t.test_score(self.param(cfg, "eval_nodes")))
        history = {key: [st.extra[key] for st in trained.stats]
                   for key in ("host_fraction", "loading_s", "load_ratio", "las_scale")}
        history = {"loss": [st.loss for st in trained.stats], **history}
        # one row per metric and point; the per-epoch curves travel in the rows' extra
        curves = {f"{k}_per_epoch": v for k, v in history.items()}
        steps = [st.batches for st in trained.stats]
        return [Measurement("train_loss", "", value=history["loss"][-1],
                            extra={**curves, "epochs": epochs, "batch_size": trainer.batch,
                                   "layer_nodes": trainer.layer_nodes, "chance_loss": trainer.chance,
                                   "steps_per_epoch": max(steps) if steps else 0,
                                   "steps_per_full_epoch": max(st.batches_full for st in trained.stats),
                                   "lr": self.param(cfg, "lr_per_gpu") * trainer.n, "gpus": trainer.n,
                                   "estimator": self.param(cfg, "estimator"), "objective": trainer.objective.metric,
                                   "feature_signal": self.param(cfg, "feature_signal"),
                                   "trained_on": str(trainer.device)}),
                Measurement("host_fraction", "fraction", value=float(np.mean(history["host_fraction"]))),
                Measurement("loading_time", "s/epoch", value=float(np.mean(history["loading_s"]))),
                Measurement("test_accuracy", "", value=trained.final, better="higher")]

    def report(self, rows, runs) -> ReportArtifact:
        rep = Report(self, rows, runs)
        shown = shown_rows(rep, ["impl", "p_topology", "p_las"])
        ok = shown.rows[shown.rows["status"] == "ok"] if not shown.rows.empty else shown.rows
        records = _loss_records(ok, shown.kind, "Machine", self.dataset, self.paper_score)
        paper = {pv.impl: pv for pv in self.paper_values if pv.metric == "test_accuracy"}
        for rec in records:
            pv = paper.get("clique_opt") if rec["Method"] == "Our+LAS" else None
            rec["Paper test acc"] = f"{pv.value:g} {pv.note}".strip() if pv else None
        table = rep.table([{k: v for k, v in rec.items() if k != "_trained"} for rec in records], empty="no rows",
                          single=("Machine",), drop_empty=False)
        history = rep.table([{k: v for k, v in rec.items() if k != "_trained"}
                             for rec in _loss_records(rep.ok, rep.label, "Run", self.dataset, self.paper_score)],
                            empty="no rows", single=(), drop_empty=False)
        changes = _las_changes(records)
        for kind, top, las, base, las_host, base_host, trained in changes:
            if trained:
                rep.notes.append(f"[{kind}] {top}: final loss with LAS {las['Final loss']:.4f} vs {base['Final loss']:.4f} "
                                 f"without ({las['Final loss'] / base['Final loss'] - 1:+.1%}; "
                                 f"{las['Final / chance']:.2f} and {base['Final / chance']:.2f} of chance); host reads "
                                 f"{las_host:.0f}% vs {base_host:.0f}%; test score {_score(las)} vs {_score(base)}"
                                 + (ACCURACY_NOTE if _apart(las, base) else "")
                                 + ". Paper: 'the two lines almost overlap' / 'almost the same convergence speed'")
            else:
                rep.notes.append(f"[{kind}] {top}: not in the paper's regime (final loss {_share(base)} and {_share(las)} "
                                 f"of chance, test score {_score(base)} and {_score(las)}; needed: under "
                                 f"{TRAINED_SHARE:g} of chance" + (f" and at least {PAPER_SCORE_SHARE:g} x the paper's "
                                                                   f"{self.paper_score:g}" if self.paper_score else "")
                                 + "): LAS vs no-LAS is not compared on untrained models")
        rep.notes += _pagraph_notes(records)
        rep.notes += [f"{pv.source}: test accuracy with LAS {pv.value:g} {pv.note} on the real dataset (a stand-in's "
                      "accuracy is not comparable)" for pv in self.paper_values]
        if shown.smoke:
            rep.notes.append(SMOKE_NOTE)
        headline = self._headline(shown, changes)
        scales = sorted(set(shown.rows["p_scale"].dropna())) if "p_scale" in shown.rows else []
        caption = (
            f"{self.figure_caption} Training loss per epoch of a 3-layer GraphSAGE-mean (torch) trained "
            "data-parallel over the simulated GPUs with ICS'22's layer-wise sampler, Our placement (Algorithm 1, paper "
            f"alpha) without and with LAS (lt {LAS_LT}, ut {LAS_UT}, MAXS {LAS_MAXS:g}, |Q'| = 8192 scaled)"
            + (" and PaGraph (its partition's training nodes only: local shuffling)" if self.pagraph else "")
            + f"; {self.dataset} stand-in at scale {', '.join(f'{s:g}' for s in scales)}. "
            + _regime_text(ok) + " Host reads and modeled loading time (Eq. 3) show what LAS buys. "
            f"Dotted grey: chance, the loss of predicting the training labels' frequencies (ln C for C balanced "
            f"classes); LAS is compared only where both curves end below {TRAINED_SHARE:g} of it and both models score "
            f"at least {PAPER_SCORE_SHARE:g} x the paper's test accuracy (a model that memorized its training nodes "
            "is not in the paper's regime). " + self._features_text(cfg_signal(shown)) + "Shown: the newest "
            f"run per machine kind at the paper's settings; every run is in {self.artifact}.history.md."
            + (f" Note: {SMOKE_NOTE}." if shown.smoke else "")
            + f" Paper: {PAPER_HARDWARE}. " + shown.caption_hardware(rep.runs))
        fig = self._figure(shown, records) if records else None
        return rep.artifact(self.title, caption, table, fig, headline=headline, skips=shown.rows, history=history,
                            claims=_las_claims(shown, records))

    def _features_text(self, signals) -> str:
        if not signals:
            return ""
        return (f"Features: the stand-in's planted class signal at centroid norm {'/'.join(f'{v:g}' for v in signals)} "
                f"(the catalog's: {_catalog_signal(self.dataset):g}). ")

    def _headline(self, shown, changes) -> str:
        if not changes:
            return ""
        kind = changes[0][0]
        size = ", ".join(f"x{s:g}" for s in sorted(set(shown.rows["p_scale"].dropna())))
        where = f"[{kind}, stand-in {size}{', smoke run' if shown.smoke else ''}] "
        mine = [c for c in changes if c[0] == kind]
        trained = [c for c in mine if c[6]]
        if not trained:
            worst = max(max(c[2]["Final / chance"], c[3]["Final / chance"]) for c in mine)
            return where + (f"not in the paper's regime (final loss up to {worst:.2f} of chance, or test score under "
                            f"{PAPER_SCORE_SHARE:g} x the paper's): no LAS comparison")
        return where + "final loss with LAS vs without: " + ", ".join(
            f"{las['Final loss'] / base['Final loss'] - 1:+.1%} on {top} ({base['Final / chance']:.2f} of chance; "
            f"host reads {b:.0f}% -> {h:.0f}%)" for _, top, las, base, h, b, _ in trained) \
            + "; paper: the two lines almost overlap"

    def _figure(self, shown, records):
        """The paper's layout: one panel per GPU configuration, a loss curve per method and the
        chance loss (one row of panels per machine kind)."""
        from matplotlib.lines import Line2D

        ok = shown.rows[(shown.rows["status"] == "ok") & (shown.rows["metric"] == "train_loss")]
        kinds = sorted({shown.kind(r) for r in ok["run_id"]})
        tops = [t for t in self.topologies if t in set(ok["p_topology"])] + \
            sorted(set(ok["p_topology"]) - set(self.topologies))
        fig, axes = figure((min(10.5, 1.5 + 4.2 * len(tops)), min(6.0, 1.8 + 2.6 * len(kinds))), ncols=len(tops),
                           nrows=len(kinds), squeeze=False)
        handles = {}
        chance_style = {"color": PALETTE["chance"], "linestyle": ":", "linewidth": 1.5}
        for i, kind in enumerate(kinds):
            for j, topology in enumerate(tops):
                ax = axes[i][j]
                cell = ok[(ok["run_id"].map(shown.kind) == kind) & (ok["p_topology"] == topology)]
                chances = set()
                for _, r in cell.iterrows():
                    name = policy_label(r["impl"], bool(r["p_las"]))
                    losses = r.get("p_loss_per_epoch")
                    losses = list(losses) if isinstance(losses, (list, tuple)) else []
                    style = {"color": policy_colour(name), "linestyle": LOSS_STYLES[name], "marker": "o",
                             "markersize": 4}
                    ax.plot(range(1, len(losses) + 1), losses, **style)
                    handles.setdefault(name, Line2D([], [], **style, label=name))
                    chance = chance_of(r, self.dataset)
                    if chance is not None:
                        chances.add(round(chance, 6))
                for chance in sorted(chances):
                    ax.axhline(chance, **chance_style)
                    handles.setdefault("chance", Line2D([], [], **chance_style, label=f"chance ({chance:.2f})"))
                top = max([*chances, *(v for line in ax.get_lines() for v in line.get_ydata())], default=1.0)
                ax.set_ylim(0, 1.06 * top)
                ax.set_title(topology, fontsize=10)
                ax.set_xlabel("epoch")
                ax.xaxis.get_major_locator().set_params(integer=True)
                ax.grid(True, alpha=0.3)
            axes[i][0].set_ylabel(f"{kind} run: training loss" if len(kinds) > 1 else "training loss")
        order = [*POLICY_ORDER, "chance"]
        legend = [handles[name] for name in sorted(handles, key=order.index)]
        fig.legend(legend, [h.get_label() for h in legend], loc="lower center", ncol=len(legend), fontsize=9,
                   frameon=False)
        epochs = sorted(set(ok["p_epochs"].dropna().astype(int))) if "p_epochs" in ok else []
        note = f"smoke run: {'/'.join(map(str, epochs))} epochs, not the paper's 30" if shown.smoke else \
            "stand-in graph"
        untrained = [r for r in records if not r["_trained"]]
        if untrained:
            note += f"; {len(untrained)} of {len(records)} curves not in the paper's regime"
        fig.suptitle(f"ICS'22 {self.artifact.replace('fig', 'Fig. ')}: training loss on {self.dataset} with and "
                     f"without LAS\n({note})", fontsize=11)
        height = fig.get_size_inches()[1]
        fig.tight_layout(rect=(0, 0.45 / height, 1, 1 - 0.2 / height))
        return fig


LOSS_STYLES = {"Our": "-", "Our+LAS": "--", "PG (re-impl.)": ":"}


ACCURACY_NOTE = (" (the ratio estimate averages the neighbours a target drew: one that drew few, most of them "
                 "boosted by LAS, leans toward the GPU-resident ones; Eq. 1's unbiased form does not train here)")


def _score(record) -> str:
    value = record.get("Test acc")
    return "?" if value is None or value != value else f"{value:.3f}"


def _apart(a, b) -> bool:
    """Test scores more than 2 points apart."""
    x, y = a.get("Test acc"), b.get("Test acc")
    return x is not None and y is not None and x == x and y == y and abs(x - y) > 0.02


def cfg_signal(shown) -> list[float]:
    """The feature signals the shown curves were trained on where a run set one."""
    rows = shown.rows
    if rows.empty or "p_feature_signal" not in rows:
        return []
    return sorted({float(v) for v in rows["p_feature_signal"].dropna()})


def _catalog_signal(dataset: str) -> float:
    from harness import datasets

    return datasets.get(dataset).standin.feature_signal


def _share(record) -> str:
    share = record.get("Final / chance") if record else None
    return "?" if share is None else f"{share:.2f}"


def _regime_text(ok) -> str:
    """The training regime of the shown curves, from what their rows recorded."""
    if ok.empty or "metric" not in ok:
        return ""
    loss = ok[ok["metric"] == "train_loss"]

    def values(column, fmt="{:g}"):
        if column not in loss:
            return "?"
        found = sorted({v for v in loss[column].dropna()})
        return "/".join(fmt.format(v) for v in found) if found else "?"

    capped = "p_steps_per_full_epoch" in loss and \
        any(a < b for a, b in zip(loss.get("p_steps_per_epoch", []), loss["p_steps_per_full_epoch"]) if a == a and b == b)
    return (f"Regime: {values('p_epochs')} epochs of {values('p_steps_per_epoch')} steps"
            + (" (capped: not whole epochs)" if capped else " (whole epochs)")
            + f", batch {values('p_batch_size')} seeds per GPU, {values('p_layer_nodes')} nodes per layer, Adam lr "
            f"{values('p_lr')} (lr per GPU x GPUs), neighbour means by the {values('p_estimator', '{}')} estimator, "
            f"trained on {values('p_trained_on', '{}')}; one training run per curve (seed 0: the spread between runs "
            f"is not measured); test {values('p_objective', '{}')} by exact inference (full neighbour means) over the "
            "test nodes.")


def _loss_records(ok, label, column: str, dataset: str, paper_score: float | None = None) -> list[dict]:
    """One table row per training point of ``ok`` (rows with their parameters expanded), named by
    ``label(run_id)`` in ``column``; ``_trained``: its final loss is under TRAINED_SHARE of chance
    and its test score at least PAPER_SCORE_SHARE of the paper's (where the paper gives one)."""
    records = []
    if ok.empty:
        return records
    for (run_id, impl, topology, las), grp in ok.groupby(["run_id", "impl", "p_topology", "p_las"], sort=False):
        by_metric = grp.drop_duplicates("metric").set_index("metric")
        losses = by_metric.get("p_loss_per_epoch", {}).get("train_loss")
        losses = list(losses) if isinstance(losses, (list, tuple)) else []
        scales = by_metric.get("p_las_scale_per_epoch", {}).get("train_loss")
        scales = sorted(set(scales)) if isinstance(scales, (list, tuple)) else []
        value = by_metric["value"].get
        final = losses[-1] if losses else value("train_loss")
        chance = chance_of(by_metric.loc["train_loss"], dataset) if "train_loss" in by_metric.index else None
        share = final / chance if chance and final is not None else None
        score = float(value("test_accuracy")) if "test_accuracy" in by_metric.index else None
        learned = paper_score is None or (score is not None and score >= PAPER_SCORE_SHARE * paper_score)
        records.append({column: label(run_id), "Topology": topology, "Method": policy_label(impl, bool(las)),
                        "s": "/".join(f"{s:g}" for s in scales) if las else "-", "Epochs": len(losses),
                        "Final loss": final, "Chance": chance, "Final / chance": share,
                        "Host reads %": 100 * float(value("host_fraction")) if "host_fraction" in by_metric.index
                        else None,
                        "Modeled load s/epoch": float(value("loading_time")) if "loading_time" in by_metric.index
                        else None,
                        "Test acc": score,
                        "_trained": share is not None and share <= TRAINED_SHARE and learned})
    return records


LAS_SAME = 0.05          # "the two lines almost overlap": the final losses within 5% of each other
LAST_EPOCHS = 3          # the epochs a final loss is averaged over (their spread its interval)


def _las_claims(shown, records) -> list:
    """Per machine kind and configuration that trained Our both ways: the final loss with LAS over
    without within LAS_SAME of 1 (the paper: the two curves almost overlap), each final loss the mean
    of the last LAST_EPOCHS epochs with its t interval; withheld where either model is not in the
    paper's regime (``records``' ``_trained``: a loss near chance, or a memorized training set)."""
    from harness.reportkit import Band, Claim, Estimate

    regime = {(r["Machine"], r["Topology"], r["Method"]): r for r in records}

    ok = shown.rows[(shown.rows["status"] == "ok") & (shown.rows["metric"] == "train_loss")] \
        if not shown.rows.empty else shown.rows
    if ok.empty or "p_loss_per_epoch" not in ok:
        return []
    finals = {}
    for _, r in ok[ok["impl"].isin(registry.names("placement", traits=("ics22",)))].iterrows():
        losses = r["p_loss_per_epoch"] if isinstance(r["p_loss_per_epoch"], (list, tuple)) else []
        if losses:
            finals[(shown.kind(r["run_id"]), r["p_topology"], bool(r["p_las"]))] = (
                Estimate.from_samples(losses[-LAST_EPOCHS:], "last epochs"), r["run_id"])
    out = []
    for (kind, topology, las), (with_las, run_a) in sorted(finals.items()):
        if not las or (kind, topology, False) not in finals:
            continue
        without, run_b = finals[(kind, topology, False)]
        pair = [regime.get((kind, topology, method)) for method in ("Our", "Our+LAS")]
        withheld = "" if all(r is not None and r["_trained"] for r in pair) else (
            "not in the paper's regime (final loss " + " and ".join(_share(r) for r in pair) + " of chance, test score "
            + " and ".join(_score(r) if r else "?" for r in pair) + ")")
        out.append(Claim(f"[{kind}] {topology}: final loss with LAS / without",
                         with_las.ratio(without) if with_las.value > 0 and without.value > 0 else None,
                         Band.around(1.0, LAS_SAME), "almost the same", null=None, runs=tuple(sorted({run_a, run_b})),
                         withheld=withheld))
    return out


def _las_changes(records) -> list[tuple]:
    """(machine, topology, Our+LAS record, Our record, host reads % with LAS, without, both trained)
    per configuration that trained Our both ways."""
    ours = {(r["Machine"], r["Topology"]): r for r in records if r["Method"] == "Our"}
    out = []
    for rec in records:
        base = ours.get((rec["Machine"], rec["Topology"]))
        if rec["Method"] == "Our+LAS" and base and base["Final loss"] and rec["Final loss"] is not None:
            out.append((rec["Machine"], rec["Topology"], rec, base, rec["Host reads %"], base["Host reads %"],
                        rec["_trained"] and base["_trained"]))
    return out


def _pagraph_notes(records) -> list[str]:
    """PaGraph's final loss beside Our's (the paper: PaGraph converges slower, local shuffling)."""
    ours = {(r["Machine"], r["Topology"]): r for r in records if r["Method"] == "Our"}
    out = []
    for rec in records:
        base = ours.get((rec["Machine"], rec["Topology"]))
        if rec["Method"] != "PG (re-impl.)" or base is None or not (rec["_trained"] and base["_trained"]):
            continue
        out.append(f"[{rec['Machine']}] {rec['Topology']}: PaGraph's final loss {rec['Final loss']:.4f} vs Our "
                   f"{base['Final loss']:.4f} ({rec['Final loss'] / base['Final loss'] - 1:+.1%}). Paper: 'PaGraph has "
                   "slower convergence than our method'")
    return out


class LossTrainer:
    """ICS'22's data-parallel training over the simulated GPUs of one point, as a pipeline the
    epoch driver runs: every step each GPU samples its own mini-batch (LAS boosting the nodes it
    reads from GPU buffers), the per-GPU losses are averaged and one optimizer step follows."""

    def __init__(self, exp: LossExperiment, point: Point, ctx):
        self.exp, self.point, self.ctx = exp, point, ctx

    def setup(self) -> None:
        import torch

        from harness import graphs
        from impls.core.topology import by_name
        from impls.placement.pagraph import PlacementTimeout
        from impls.placement.sampling import LayerWiseSampler, LocalityBoost, ScaleController

        exp, prm, cfg, bench = self.exp, self.point.params, self.ctx.cfg, workbench(self.ctx)
        signal = exp.param(cfg, "feature_signal")
        graph = self.graph = graphs.load(self.ctx, exp.dataset, prm["scale"],
                                         **({"feature_signal": signal} if signal else {}))
        if graph.features is None or graph.labels is None:
            raise SkipPoint(f"{exp.dataset}: needs node features and labels")
        topology = by_name(prm["topology"])
        buffer_size = int(prm["buffer_fraction"] * graph.num_nodes)
        options = policy_options(self.point.impl, alpha=paper_alpha(prm["topology"]), time_cap_s=time_cap(exp, cfg))
        try:
            self.placement = bench.placement(graph, self.point.impl, prm["topology"], buffer_size, seed=cfg.seed,
                                             **options)
        except PlacementTimeout as exc:
            raise SkipPoint(f"timeout: {exc}") from None
        n = self.n = topology.num_gpus
        scale = prm["scale"]
        self.layer_nodes = scaled(PAPER_LAYER_NODES, scale, 64)
        self.batch = exp.param(cfg, "batch_size") or scaled(512 if exp.dataset in ("reddit", "products") else 2048,
                                                            scale, 32)
        self.las_setting = exp.param(cfg, "las_scale")
        self.ratio = exp.param(cfg, "estimator") == "ratio"
        self.controller = ScaleController(LAS_LT, LAS_UT, LAS_MAXS)
        self.scale_now = (1.0 if self.las_setting == "adaptive" else float(self.las_setting)) if prm["las"] else 1.0
        self.boosts = [LocalityBoost(bench.locality_sets(graph, self.placement, g, scaled(PAPER_Q_SIZE, scale, 64)),
                                     self.scale_now) if prm["las"] else None for g in range(n)]
        self.samplers = [LayerWiseSampler(self.layer_nodes, NUM_LAYERS, self.boosts[g]) for g in range(n)]
        self.lookups = [self.placement.lookup(g).dev_num for g in range(n)]
        self.cost = cost_model(graph, topology)
        self.device = torch.device("cuda" if cfg.device == "cuda" and torch.cuda.is_available() else "cpu")
        self.x = torch.from_numpy(np.asarray(graph.features, dtype=np.float32)).to(self.device)
        self.y = torch.from_numpy(np.asarray(graph.labels)).to(self.device)
        self.objective = Objective(np.asarray(graph.labels))
        self.train = self.objective.labelled(graph.labels, graph.train_idx)
        self.chance = self.objective.chance(np.asarray(graph.labels)[self.train])
        self.model = build_model(self.x.shape[1], exp.param(cfg, "hidden"), self.objective.classes, NUM_LAYERS,
                                 cfg.seed).to(self.device)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=exp.param(cfg, "lr_per_gpu") * n)  # ICS'22: 0.01 n
        self.rng = np.random.default_rng(cfg.seed)

    def train_epoch(self, epoch: int, breakdown: bool = False, max_batches: int | None = None):
        """One epoch: its mean loss, and in its extra the share of host reads, the modeled loading
        seconds (Eq. 3, per GPU on average), their share of the epoch and the LAS scale s used."""
        import torch

        from impls.pipelines.base import EpochStats
        from impls.placement.sampling import ratio_weights
        from impls.placement.simulate import gpu_batches

        cfg, graph, n, rng = self.ctx.cfg, self.graph, self.n, self.rng
        per_gpu = gpu_batches(self.train, self.placement, self.batch, rng)
        steps = full = max(len(b) for b in per_gpu)
        cap = self.exp.param(cfg, "max_steps")
        steps = min(steps, cap) if cap else steps
        losses, reads, compute_s = [], np.zeros(3), 0.0
        for step in range(steps):
            started = now()
            self.opt.zero_grad()
            total, count = 0.0, 0
            for g in range(n):
                if step >= len(per_gpu[g]):
                    continue
                seeds = per_gpu[g][step]
                sample = self.samplers[g].sample(graph.indptr, graph.indices, seeds, rng)
                if self.ratio:
                    for block in sample.blocks:
                        block.weight = ratio_weights(block)
                src = self.lookups[g][sample.input_nodes]
                reads += [np.count_nonzero(src == g), np.count_nonzero((src >= 0) & (src != g)),
                          np.count_nonzero(src < 0)]
                logits = self.model(self.x[torch.from_numpy(sample.input_nodes).to(self.device)], sample.blocks)
                loss = self.objective.loss(logits, self.y[torch.from_numpy(seeds).to(self.device)])
                total = total + loss
                count += 1
            (total / count).backward()                           # = averaging the GPUs' gradients
            self.opt.step()
            losses.append(float(total.detach()) / count)
            compute_s += now() - started
        load_s = float(self.cost.read_cost(*reads)) / n                  # modeled, per GPU on average
        ratio = load_s / (load_s + compute_s / n) if load_s + compute_s > 0 else 0.0
        las = self.point.params["las"]
        extra = {"host_fraction": float(reads[2] / max(reads.sum(), 1)), "loading_s": load_s, "load_ratio": ratio,
                 "las_scale": self.scale_now if las else 1.0}
        if las and self.las_setting == "adaptive":
            self.scale_now = self.controller.update(ratio)
            for boost in self.boosts:
                boost.scale = self.scale_now
        return EpochStats(epoch, compute_s, None, None, None, steps, full, float(np.mean(losses)), 0, 0, False, extra)

    def test_score(self, max_nodes: int | None) -> float:
        """Test accuracy (micro-F1 for multi-hot labels) of exact inference: every layer over the
        whole graph with each node's full neighbour mean, no sampling."""
        return evaluate(self.model, self.graph, self.x, self.y, self.objective, max_nodes, self.ctx.cfg.seed)


def mean_adjacency(graph, device):
    """The graph's row-normalized adjacency (1 / deg per entry) as a torch sparse CSR matrix."""
    import torch

    import warnings

    n = graph.num_nodes
    degree = np.diff(graph.indptr).astype(np.float32)
    weight = np.repeat(1.0 / np.maximum(degree, 1), np.diff(graph.indptr)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)          # "sparse CSR support is in beta"
        return torch.sparse_csr_tensor(torch.from_numpy(np.asarray(graph.indptr, dtype=np.int64)),
                                       torch.from_numpy(np.asarray(graph.indices, dtype=np.int64)),
                                       torch.from_numpy(weight), size=(n, n)).to(device)


def evaluate(model, graph, x, y, objective: Objective, max_nodes: int | None, seed: int) -> float:
    import torch

    test = objective.labelled(graph.labels, graph.test_idx)
    if max_nodes:
        test = np.sort(np.random.default_rng(seed + 1).permutation(test)[:max_nodes])
    with torch.no_grad():
        logits = model.full_forward(x, mean_adjacency(graph, x.device))
        nodes = torch.from_numpy(test).to(x.device)
        return objective.score(logits[nodes], y[nodes])
