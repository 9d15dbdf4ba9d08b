"""ICS'22 Figs. 7, 8, 9, 12: training loss with and without locality-aware sampling (LAS).

A small GraphSAGE-mean model in plain torch on CPU, trained data-parallel the way ICS'22 trains
(Sec. 5.1: three layers, layer-wise sampling, Adam, learning rate proportional to the number of
GPUs n; the paper's 0.01 n is too large for the toy model, see ``lr_per_gpu``): each step
every simulated GPU samples its own mini-batch (with LAS boosting the nodes it can read from GPU
buffers: its own and its NVLink neighbors'), the per-GPU losses are averaged (what gradient
averaging does) and one optimizer step follows. Aggregation uses the sampler's unbiased weights
1 / (deg_i q_j), so LAS changes the variance of the estimate, not its mean (Sec. 4).

The rows hold the final training loss, the mean share of input reads that went to the host, the
mean modeled loading time (Eq. 3) and the test accuracy; the per-epoch curves (loss, host share,
loading time, s) travel in the train_loss row's ``extra``, so the report shows both sides of the
tradeoff. ``las_scale``
is MAXS = 8 by default (the largest s Algorithm 2 may reach, the worst case for convergence the
paper accepts); ``adaptive`` runs Algorithm 2 with r = modeled loading / (modeled loading +
measured compute) of the previous epoch.
"""

from __future__ import annotations

import contextlib
import time

import numpy as np

from harness.argtypes import BadValue, or_word, positive_float, positive_int, str_list
from harness.artifact import ReportArtifact
from harness.errors import SkipPoint
from harness.experiment import Experiment, Measurement, PaperValue, Param, Point
from harness.reportkit import Report, figure
from harness.worlds import Worlds

from ..kit import training as kit
from . import PAPER_HARDWARE
from .common import cost_model, scaled, workbench
from .paper import (LAS_LT, LAS_MAXS, LAS_UT, NUM_LAYERS, PAPER_LAYER_NODES, PAPER_Q_SIZE, POLICY_COLOURS, POLICY_ORDER,
                    QUICK_PAGRAPH_CAP_S, paper_alpha)
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

        def forward(self, x, blocks):
            h = x
            for depth, block in enumerate(reversed(blocks)):       # input layer first
                dst = len(block.dst)
                agg = torch.zeros(dst, h.shape[1], dtype=h.dtype)
                msg = h[torch.from_numpy(block.edge_src)] * torch.from_numpy(block.weight).to(h.dtype)[:, None]
                agg.index_add_(0, torch.from_numpy(block.edge_dst), msg)
                h = self.self_lin[depth](h[:dst]) + self.neigh_lin[depth](agg)
                if depth < len(blocks) - 1:
                    h = torch.relu(h)
            return h

    torch.manual_seed(seed)
    return SageMean()


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
    method_params = ("epochs", "buffer_fraction", "las_scale", "hidden", "lr_per_gpu", "batch_size")

    @property
    def paper_values(self) -> tuple[PaperValue, ...]:
        section, accuracy, spread = self.paper_accuracy
        return (PaperValue(f"{section} ({self.figure})", "clique_opt", {"las": True}, "test_accuracy", accuracy, "",
                           f"(+/- {spread})"),) if section else ()

    @property
    def differs_from_paper(self) -> str:
        return (f"A small GraphSAGE-mean (64 hidden units, not the paper's 512) trained on the CPU over a "
                f"{self.dataset} stand-in a fraction of the real size, with the GPUs simulated (data-parallel loss "
                "averaging, Eq. 3 for loading), not on the paper's 8x V100; PaGraph's local shuffling is "
                "re-implemented.")

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
            "epochs": Param(30, positive_int, "epochs (paper: 30)"),
            "buffer_fraction": Param(0.1, positive_float, "feature buffer per GPU as a fraction of N"),
            "las_scale": Param(LAS_MAXS, las_scale_param, "s for LAS: a number, or 'adaptive' (Algorithm 2)"),
            "hidden": Param(64, positive_int, "hidden units (paper: 512)"),
            "lr_per_gpu": Param(0.0025, positive_float, "Adam learning rate per GPU: lr = lr_per_gpu x n "
                                "(paper: 0.01 n with batches of 512-2048 and 512 hidden units; the toy "
                                "model's scaled-down batches diverge at 0.01)"),
            "batch_size": Param(None, positive_int, "training nodes per GPU and step (default: paper's, scaled)"),
            "eval_nodes": Param(2000, positive_int, "test nodes evaluated at the end"),
            "max_steps": Param(None, positive_int, "cap on steps per epoch (--quick: 20)"),
            "pagraph_cap_s": Param(120.0, positive_float, "PaGraph partitioning time cap (s)"),
        }

    def default_scale(self, cfg, dataset=None) -> float:
        return self.quick_scale if cfg.quick else self.full_scale

    def points(self, cfg):
        scale = self.scale(cfg)
        for topology in self.param(cfg, "topologies"):
            base = {"dataset": self.dataset, "scale": scale, "topology": topology,
                    "buffer_fraction": self.param(cfg, "buffer_fraction")}
            yield Point("clique_opt", {**base, "las": False})
            yield Point("clique_opt", {**base, "las": True})
            if not cfg.quick:
                yield Point("pagraph", {**base, "las": False})

    def run_point(self, point: Point, ctx) -> list[Measurement]:
        cfg = ctx.cfg
        trainer = LossTrainer(self, point, ctx)
        epochs = self.param(cfg, "epochs") if not cfg.quick else min(self.param(cfg, "epochs"), 3)
        with one_torch_thread():
            trained = kit.run_epochs(trainer, None, point.label(), epochs, evaluate="never", lifetime=kit.no_lifetime(),
                                     finish=lambda t: t.test_accuracy(self.param(cfg, "eval_nodes")))
        history = {key: [st.extra[key] for st in trained.stats]
                   for key in ("host_fraction", "loading_s", "load_ratio", "las_scale")}
        history = {"loss": [st.loss for st in trained.stats], **history}
        # one row per metric and point; the per-epoch curves travel in the rows' extra
        curves = {f"{k}_per_epoch": v for k, v in history.items()}
        return [Measurement("train_loss", "", value=history["loss"][-1],
                            extra={**curves, "epochs": epochs, "batch_size": trainer.batch,
                                   "layer_nodes": trainer.layer_nodes}),
                Measurement("host_fraction", "fraction", value=float(np.mean(history["host_fraction"]))),
                Measurement("loading_time", "s/epoch", value=float(np.mean(history["loading_s"]))),
                Measurement("test_accuracy", "", value=trained.final, better="higher")]

    def report(self, rows, runs) -> ReportArtifact:
        rep = Report(self, rows, runs)
        shown = shown_rows(rep, ["impl", "p_topology", "p_las"])
        records = _loss_records(shown.rows[shown.rows["status"] == "ok"] if not shown.rows.empty else shown.rows,
                                shown.kind, "Machine")
        paper = {pv.impl: pv for pv in self.paper_values if pv.metric == "test_accuracy"}
        for rec in records:
            pv = paper.get("clique_opt") if rec["Method"] == "Our+LAS" else None
            rec["Paper test acc"] = f"{pv.value:g} {pv.note}".strip() if pv else None
        table = rep.table(records, empty="no rows", single=("Machine",), drop_empty=False)
        history = rep.table(_loss_records(rep.ok, rep.label, "Run"), empty="no rows", single=(), drop_empty=False)
        changes = _las_changes(records)
        rep.notes += [f"[{kind}] {top}: final loss with LAS {las:.4f} vs {base:.4f} without ({las / base - 1:+.1%}); "
                      f"host reads {las_host:.0f}% vs {base_host:.0f}%. Paper: 'the two lines almost overlap' / "
                      "'almost the same convergence speed'" for kind, top, las, base, las_host, base_host in changes]
        rep.notes += [f"{pv.source}: test accuracy with LAS {pv.value:g} {pv.note} on the real dataset (a stand-in's "
                      "accuracy is not comparable)" for pv in self.paper_values]
        if shown.smoke:
            rep.notes.append(SMOKE_NOTE)
        headline = ""
        if changes:
            kind = changes[0][0]
            size = ", ".join(f"x{s:g}" for s in sorted(set(shown.rows["p_scale"].dropna())))
            headline = (f"[{kind}, stand-in {size}{', smoke run' if shown.smoke else ''}] final loss with LAS vs "
                        "without: " + ", ".join(f"{las / base - 1:+.1%} on {top} (host reads {b:.0f}% -> {h:.0f}%)"
                                                for k, top, las, base, h, b in changes if k == kind)
                        + "; paper: the two lines almost overlap")
        scales = sorted(set(shown.rows["p_scale"].dropna())) if "p_scale" in shown.rows else []
        caption = (
            f"{self.figure_caption} Training loss per epoch of a 3-layer GraphSAGE-mean (CPU, torch) trained "
            "data-parallel over the simulated GPUs with ICS'22's layer-wise sampler, Our placement (Algorithm 1, paper "
            f"alpha) without and with LAS (lt {LAS_LT}, ut {LAS_UT}, MAXS {LAS_MAXS:g}, |Q'| = 8192 scaled) and "
            f"PaGraph (local shuffling) where its partitioning finishes in the time cap; {self.dataset} stand-in at "
            f"scale {', '.join(f'{s:g}' for s in scales)}. Host reads and modeled loading time (Eq. 3) show what LAS "
            "buys. Shown: the newest run per machine kind at the paper's settings; every run is in "
            f"{self.artifact}.history.md." + (f" Note: {SMOKE_NOTE}." if shown.smoke else "")
            + f" Paper: {PAPER_HARDWARE}. " + shown.caption_hardware(rep.runs))
        fig = self._figure(shown) if records else None
        return rep.artifact(self.title, caption, table, fig, headline=headline, skips=shown.rows, history=history,
                            claims=_las_claims(shown))

    def _figure(self, shown):
        """The paper's layout: one panel per GPU configuration, a loss curve per method (one row of
        panels per machine kind)."""
        from matplotlib.lines import Line2D

        ok = shown.rows[(shown.rows["status"] == "ok") & (shown.rows["metric"] == "train_loss")]
        kinds = sorted({shown.kind(r) for r in ok["run_id"]})
        tops = [t for t in self.topologies if t in set(ok["p_topology"])] + \
            sorted(set(ok["p_topology"]) - set(self.topologies))
        fig, axes = figure((min(10.5, 1.5 + 4.2 * len(tops)), min(6.0, 1.8 + 2.6 * len(kinds))), ncols=len(tops),
                           nrows=len(kinds), squeeze=False)
        handles = {}
        for i, kind in enumerate(kinds):
            for j, topology in enumerate(tops):
                ax = axes[i][j]
                cell = ok[(ok["run_id"].map(shown.kind) == kind) & (ok["p_topology"] == topology)]
                for _, r in cell.iterrows():
                    name = method_name(r["impl"], bool(r["p_las"]))
                    losses = r.get("p_loss_per_epoch")
                    losses = list(losses) if isinstance(losses, (list, tuple)) else []
                    style = {"color": POLICY_COLOURS[name], "linestyle": LOSS_STYLES[name], "marker": "o",
                             "markersize": 4}
                    ax.plot(range(1, len(losses) + 1), losses, **style)
                    handles.setdefault(name, Line2D([], [], **style, label=name))
                ax.set_title(topology, fontsize=10)
                ax.set_xlabel("epoch")
                ax.xaxis.get_major_locator().set_params(integer=True)
                ax.grid(True, alpha=0.3)
            axes[i][0].set_ylabel(f"{kind} run: training loss" if len(kinds) > 1 else "training loss")
        legend = [handles[name] for name in sorted(handles, key=lambda n: POLICY_ORDER.index(n))]
        fig.legend(legend, [h.get_label() for h in legend], loc="lower center", ncol=len(legend), fontsize=9,
                   frameon=False)
        epochs = sorted(set(ok["p_epochs"].dropna().astype(int))) if "p_epochs" in ok else []
        note = f"smoke run: {'/'.join(map(str, epochs))} epochs, not the paper's 30" if shown.smoke else \
            "stand-in graph"
        fig.suptitle(f"ICS'22 {self.artifact.replace('fig', 'Fig. ')}: training loss on {self.dataset} with and "
                     f"without LAS\n({note})", fontsize=11)
        height = fig.get_size_inches()[1]
        fig.tight_layout(rect=(0, 0.45 / height, 1, 1 - 0.2 / height))
        return fig


def method_name(impl: str, las: bool) -> str:
    return {"clique_opt": "Our", "pagraph": "PG (re-impl.)"}.get(impl, impl) + ("+LAS" if las else "")


LOSS_STYLES = {"Our": "-", "Our+LAS": "--", "PG (re-impl.)": ":"}


def _loss_records(ok, label, column: str) -> list[dict]:
    """One table row per training point of ``ok`` (rows with their parameters expanded), named by
    ``label(run_id)`` in ``column``."""
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
        records.append({column: label(run_id), "Topology": topology, "Method": method_name(impl, bool(las)),
                        "s": "/".join(f"{s:g}" for s in scales) if las else "-", "Epochs": len(losses),
                        "Loss epoch 1": losses[0] if losses else None,
                        "Final loss": losses[-1] if losses else value("train_loss"),
                        "Host reads %": 100 * float(value("host_fraction")) if "host_fraction" in by_metric.index
                        else None,
                        "Modeled load s/epoch": float(value("loading_time")) if "loading_time" in by_metric.index
                        else None,
                        "Test acc": float(value("test_accuracy")) if "test_accuracy" in by_metric.index else None})
    return records


LAS_SAME = 0.05          # "the two lines almost overlap": the final losses within 5% of each other
LAST_EPOCHS = 3          # the epochs a final loss is averaged over (their spread its interval)


def _las_claims(shown) -> list:
    """Per machine kind and configuration that trained Our both ways: the final loss with LAS over
    without within LAS_SAME of 1 (the paper: the two curves almost overlap), each final loss the mean
    of the last LAST_EPOCHS epochs with its t interval."""
    from harness.reportkit import Band, Claim, Estimate

    ok = shown.rows[(shown.rows["status"] == "ok") & (shown.rows["metric"] == "train_loss")] \
        if not shown.rows.empty else shown.rows
    if ok.empty or "p_loss_per_epoch" not in ok:
        return []
    finals = {}
    for _, r in ok[ok["impl"] == "clique_opt"].iterrows():
        losses = r["p_loss_per_epoch"] if isinstance(r["p_loss_per_epoch"], (list, tuple)) else []
        if losses:
            finals[(shown.kind(r["run_id"]), r["p_topology"], bool(r["p_las"]))] = (
                Estimate.from_samples(losses[-LAST_EPOCHS:], "last epochs"), r["run_id"])
    out = []
    for (kind, topology, las), (with_las, run_a) in sorted(finals.items()):
        if not las or (kind, topology, False) not in finals:
            continue
        without, run_b = finals[(kind, topology, False)]
        out.append(Claim(f"[{kind}] {topology}: final loss with LAS / without",
                         with_las.ratio(without) if with_las.value > 0 and without.value > 0 else None,
                         Band.around(1.0, LAS_SAME), "almost the same", null=None, runs=tuple(sorted({run_a, run_b}))))
    return out


def _las_changes(records) -> list[tuple]:
    """(machine, topology, final loss with LAS, without, host reads % with LAS, without) per
    configuration that trained Our both ways."""
    ours = {(r["Machine"], r["Topology"]): r for r in records if r["Method"] == "Our"}
    out = []
    for rec in records:
        base = ours.get((rec["Machine"], rec["Topology"]))
        if rec["Method"] == "Our+LAS" and base and base["Final loss"] and rec["Final loss"] is not None:
            out.append((rec["Machine"], rec["Topology"], rec["Final loss"], base["Final loss"], rec["Host reads %"],
                        base["Host reads %"]))
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
        graph = self.graph = graphs.load(self.ctx, exp.dataset, prm["scale"])
        if graph.features is None or graph.labels is None or graph.labels.ndim != 1:
            raise SkipPoint(f"{exp.dataset}: needs node features and single-label classes")
        topology = by_name(prm["topology"])
        buffer_size = int(prm["buffer_fraction"] * graph.num_nodes)
        options = {"alpha": paper_alpha(prm["topology"])} if self.point.impl == "clique_opt" else \
            {"time_cap_s": min(exp.param(cfg, "pagraph_cap_s"), QUICK_PAGRAPH_CAP_S) if cfg.quick
             else exp.param(cfg, "pagraph_cap_s")}
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
        self.controller = ScaleController(LAS_LT, LAS_UT, LAS_MAXS)
        self.scale_now = (1.0 if self.las_setting == "adaptive" else float(self.las_setting)) if prm["las"] else 1.0
        self.boosts = [LocalityBoost(bench.locality_sets(graph, self.placement, g, scaled(PAPER_Q_SIZE, scale, 64)),
                                     self.scale_now) if prm["las"] else None for g in range(n)]
        self.samplers = [LayerWiseSampler(self.layer_nodes, NUM_LAYERS, self.boosts[g]) for g in range(n)]
        self.lookups = [self.placement.lookup(g).dev_num for g in range(n)]
        self.cost = cost_model(graph, topology)
        self.x = torch.from_numpy(np.asarray(graph.features, dtype=np.float32))
        self.y = torch.from_numpy(np.asarray(graph.labels, dtype=np.int64))
        self.train = graph.train_idx[graph.labels[graph.train_idx] >= 0]
        classes = int(graph.labels.max()) + 1
        self.model = build_model(self.x.shape[1], exp.param(cfg, "hidden"), classes, NUM_LAYERS, cfg.seed)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=exp.param(cfg, "lr_per_gpu") * n)  # ICS'22: 0.01 n
        self.rng = np.random.default_rng(cfg.seed)

    def train_epoch(self, epoch: int, breakdown: bool = False, max_batches: int | None = None):
        """One epoch: its mean loss, and in its extra the share of host reads, the modeled loading
        seconds (Eq. 3, per GPU on average), their share of the epoch and the LAS scale s used."""
        import torch

        from impls.pipelines.base import EpochStats
        from impls.placement.simulate import gpu_batches

        cfg, graph, n, rng = self.ctx.cfg, self.graph, self.n, self.rng
        per_gpu = gpu_batches(self.train, self.placement, self.batch, rng)
        steps = full = max(len(b) for b in per_gpu)
        cap = self.exp.param(cfg, "max_steps") or (20 if cfg.quick else None)
        steps = min(steps, cap) if cap else steps
        losses, reads, compute_s = [], np.zeros(3), 0.0
        for step in range(steps):
            started = time.perf_counter()
            self.opt.zero_grad()
            total, count = 0.0, 0
            for g in range(n):
                if step >= len(per_gpu[g]):
                    continue
                seeds = per_gpu[g][step]
                sample = self.samplers[g].sample(graph.indptr, graph.indices, seeds, rng)
                src = self.lookups[g][sample.input_nodes]
                reads += [np.count_nonzero(src == g), np.count_nonzero((src >= 0) & (src != g)),
                          np.count_nonzero(src < 0)]
                logits = self.model(self.x[torch.from_numpy(sample.input_nodes)], sample.blocks)
                loss = torch.nn.functional.cross_entropy(logits, self.y[torch.from_numpy(seeds)])
                total = total + loss
                count += 1
            (total / count).backward()                           # = averaging the GPUs' gradients
            self.opt.step()
            losses.append(float(total.detach()) / count)
            compute_s += time.perf_counter() - started
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

    def test_accuracy(self, max_nodes: int) -> float:
        return evaluate(self.model, self.graph, self.x, self.y, self.layer_nodes, max_nodes, self.ctx.cfg.seed)


def evaluate(model, graph, x, y, layer_nodes: int, max_nodes: int, seed: int) -> float:
    import torch

    from impls.placement.sampling import LayerWiseSampler

    rng = np.random.default_rng(seed + 1)
    test = graph.test_idx[graph.labels[graph.test_idx] >= 0]
    test = rng.permutation(test)[:max_nodes]
    sampler = LayerWiseSampler(2 * layer_nodes, NUM_LAYERS)
    correct = 0
    with torch.no_grad():
        for start in range(0, len(test), 256):
            seeds = test[start:start + 256]
            sample = sampler.sample(graph.indptr, graph.indices, seeds, rng)
            pred = model(x[torch.from_numpy(sample.input_nodes)], sample.blocks).argmax(dim=1)
            correct += int((pred == y[torch.from_numpy(seeds)]).sum())
    return correct / max(1, len(test))
