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

from harness.errors import HarnessError, SkipPoint
from harness.experiment import Experiment, Measurement, Param, Point, positive_float, positive_int
from harness.report import ReportArtifact
from harness.tables import caption_hardware, expand_params, run_labels, skip_notes

from . import PAPER_HARDWARE
from .common import (LAS_LT, LAS_MAXS, LAS_UT, NUM_LAYERS, PAPER_LAYER_NODES, PAPER_Q_SIZE,
                     QUICK_PAGRAPH_CAP_S, WORKBENCH, cost_model, load_graph, paper_alpha, scaled, str_list)


def las_scale_param(text: str):
    if text.strip() == "adaptive":
        return "adaptive"
    value = float(text)
    if value < 1:
        raise HarnessError("las_scale must be >= 1 or 'adaptive'")
    return value


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
    """Training loss per epoch, Our placement with and without LAS (and PaGraph's local shuffling)."""

    paper = "placement"
    interface = "placement"
    impls = ("clique_opt", "pagraph")
    metric, unit, better = "train_loss", "", "lower"
    paper_hardware = PAPER_HARDWARE
    dataset = ""
    quick_scale = 0.02
    full_scale = 0.1
    topologies = ("2GPU", "(2+2)GPU")
    figure_caption = ""

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

    def default_scale(self, cfg) -> float:
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

    def run_point(self, point: Point, cfg) -> list[Measurement]:
        with one_torch_thread():
            return self._run_point(point, cfg)

    def _run_point(self, point: Point, cfg) -> list[Measurement]:
        import torch

        from impls.placement.pagraph import PlacementTimeout
        from impls.placement.sampling import LayerWiseSampler, LocalityBoost, ScaleController
        from impls.placement.simulate import gpu_batches
        from impls.placement.topology import by_name

        prm = point.params
        graph = load_graph(self.dataset, prm["scale"], cfg.seed, str(cfg.data_root) if cfg.data_root else None)
        if graph.features is None or graph.labels is None or graph.labels.ndim != 1:
            raise SkipPoint(f"{self.dataset}: needs node features and single-label classes")
        topology = by_name(prm["topology"])
        buffer_size = int(prm["buffer_fraction"] * graph.num_nodes)
        options = {"alpha": paper_alpha(prm["topology"])} if point.impl == "clique_opt" else \
            {"time_cap_s": min(self.param(cfg, "pagraph_cap_s"), QUICK_PAGRAPH_CAP_S) if cfg.quick
             else self.param(cfg, "pagraph_cap_s")}
        try:
            placement = WORKBENCH.placement(graph, point.impl, prm["topology"], buffer_size, seed=cfg.seed, **options)
        except PlacementTimeout as exc:
            raise SkipPoint(f"timeout: {exc}") from None

        n = topology.num_gpus
        scale = prm["scale"]
        layer_nodes = scaled(PAPER_LAYER_NODES, scale, 64)
        batch = self.param(cfg, "batch_size") or scaled(512 if self.dataset in ("reddit", "products") else 2048,
                                                        scale, 32)
        epochs = self.param(cfg, "epochs") if not cfg.quick else min(self.param(cfg, "epochs"), 3)
        las_setting = self.param(cfg, "las_scale")
        controller = ScaleController(LAS_LT, LAS_UT, LAS_MAXS)
        scale_now = (1.0 if las_setting == "adaptive" else float(las_setting)) if prm["las"] else 1.0
        boosts = [LocalityBoost(WORKBENCH.locality_sets(graph, placement, g, scaled(PAPER_Q_SIZE, scale, 64)),
                                scale_now) if prm["las"] else None for g in range(n)]
        samplers = [LayerWiseSampler(layer_nodes, NUM_LAYERS, boosts[g]) for g in range(n)]
        lookups = [placement.lookup(g).dev_num for g in range(n)]
        cost = cost_model(graph, topology)

        x = torch.from_numpy(np.asarray(graph.features, dtype=np.float32))
        y = torch.from_numpy(np.asarray(graph.labels, dtype=np.int64))
        train = graph.train_idx[graph.labels[graph.train_idx] >= 0]
        classes = int(graph.labels.max()) + 1
        model = build_model(x.shape[1], self.param(cfg, "hidden"), classes, NUM_LAYERS, cfg.seed)
        opt = torch.optim.Adam(model.parameters(), lr=self.param(cfg, "lr_per_gpu") * n)   # ICS'22: 0.01 n
        rng = np.random.default_rng(cfg.seed)
        history = {"loss": [], "host_fraction": [], "loading_s": [], "load_ratio": [], "las_scale": []}
        for epoch in range(1, epochs + 1):
            per_gpu = gpu_batches(train, placement, batch, rng)
            steps = max(len(b) for b in per_gpu)
            cap = self.param(cfg, "max_steps") or (20 if cfg.quick else None)
            steps = min(steps, cap) if cap else steps
            losses, reads, compute_s = [], np.zeros(3), 0.0
            for step in range(steps):
                started = time.perf_counter()
                opt.zero_grad()
                total, count = 0.0, 0
                for g in range(n):
                    if step >= len(per_gpu[g]):
                        continue
                    seeds = per_gpu[g][step]
                    sample = samplers[g].sample(graph.indptr, graph.indices, seeds, rng)
                    src = lookups[g][sample.input_nodes]
                    reads += [np.count_nonzero(src == g), np.count_nonzero((src >= 0) & (src != g)),
                              np.count_nonzero(src < 0)]
                    logits = model(x[torch.from_numpy(sample.input_nodes)], sample.blocks)
                    loss = torch.nn.functional.cross_entropy(logits, y[torch.from_numpy(seeds)])
                    total = total + loss
                    count += 1
                (total / count).backward()                           # = averaging the GPUs' gradients
                opt.step()
                losses.append(float(total.detach()) / count)
                compute_s += time.perf_counter() - started
            load_s = float(cost.read_cost(*reads)) / n                  # modeled, per GPU on average
            ratio = load_s / (load_s + compute_s / n) if load_s + compute_s > 0 else 0.0
            history["loss"].append(float(np.mean(losses)))
            history["host_fraction"].append(float(reads[2] / max(reads.sum(), 1)))
            history["loading_s"].append(load_s)
            history["load_ratio"].append(ratio)
            history["las_scale"].append(scale_now if prm["las"] else 1.0)
            if prm["las"] and las_setting == "adaptive":
                scale_now = controller.update(ratio)
                for boost in boosts:
                    boost.scale = scale_now
        acc = evaluate(model, graph, x, y, layer_nodes, self.param(cfg, "eval_nodes"), cfg.seed)
        # one row per metric and point; the per-epoch curves travel in the rows' extra
        curves = {f"{k}_per_epoch": v for k, v in history.items()}
        return [Measurement("train_loss", "", value=history["loss"][-1],
                            extra={**curves, "epochs": epochs, "batch_size": batch, "layer_nodes": layer_nodes}),
                Measurement("host_fraction", "fraction", value=float(np.mean(history["host_fraction"]))),
                Measurement("loading_time", "s/epoch", value=float(np.mean(history["loading_s"]))),
                Measurement("test_accuracy", "", value=acc, better="higher")]

    def report(self, rows, runs) -> ReportArtifact:
        return loss_report(self, rows, runs)


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


def loss_report(exp: LossExperiment, rows, runs) -> ReportArtifact:
    import matplotlib.pyplot as plt
    import pandas as pd

    rows = expand_params(rows)
    labels = run_labels(rows, runs)
    ok = rows[rows["status"] == "ok"]
    records = []
    curves = []
    for (run_id, impl, topology, las), grp in ok.groupby(["run_id", "impl", "p_topology", "p_las"], sort=False):
        def one(metric, column="value"):
            hit = grp[grp["metric"] == metric]
            return hit.iloc[0][column] if not hit.empty and column in hit else None

        losses = one("train_loss", "p_loss_per_epoch")
        losses = list(losses) if isinstance(losses, (list, tuple)) else []
        scales = one("train_loss", "p_las_scale_per_epoch")
        scales = sorted(set(scales)) if isinstance(scales, (list, tuple)) else []
        name = {"clique_opt": "Our", "pagraph": "PG (re-impl.)"}.get(impl, impl) + ("+LAS" if las else "")
        host, load, acc = one("host_fraction"), one("loading_time"), one("test_accuracy")
        records.append({"Run": labels.get(run_id, run_id), "Topology": topology, "Method": name,
                        "s": "/".join(f"{s:g}" for s in scales) if las else "-",
                        "Epochs": len(losses),
                        "Loss epoch 1": losses[0] if losses else None,
                        "Final loss": losses[-1] if losses else one("train_loss"),
                        "Host reads %": 100 * float(host) if host is not None else None,
                        "Modeled load s/epoch": float(load) if load is not None else None,
                        "Test acc": float(acc) if acc is not None else None})
        curves.append((labels.get(run_id, run_id), topology, name, list(range(1, len(losses) + 1)), losses))
    table = pd.DataFrame.from_records(records)
    if not table.empty and table["Run"].nunique() == 1:
        table = table.drop(columns=["Run"])
    notes = []
    for rec in reversed(records):                 # the latest run first: it heads the index
        if rec["Method"] == "Our+LAS":
            base = next((r for r in records if r["Run"] == rec["Run"] and r["Topology"] == rec["Topology"]
                         and r["Method"] == "Our"), None)
            if base and base["Final loss"] and rec["Final loss"] is not None:
                notes.append(f"{rec['Run']} {rec['Topology']}: final loss with LAS {rec['Final loss']:.4f} vs "
                             f"{base['Final loss']:.4f} without ({rec['Final loss'] / base['Final loss'] - 1:+.1%}); "
                             f"host reads {rec['Host reads %']:.0f}% vs {base['Host reads %']:.0f}%. Paper: "
                             "'the two lines almost overlap' / 'almost the same convergence speed'")
    for pv in exp.paper_values:
        notes.append(f"{pv.source}: test accuracy with LAS {pv.value:g} {pv.note} on the real dataset "
                     "(a stand-in's accuracy is not comparable)")
    notes += skip_notes(rows, labels)
    scales = sorted(set(rows["p_scale"].dropna()))
    caption = (f"{exp.figure_caption} Training loss per epoch of a 3-layer GraphSAGE-mean (CPU, torch) trained "
               f"data-parallel over the simulated GPUs with ICS'22's layer-wise sampler, Our placement "
               f"(Algorithm 1, paper alpha) without and with LAS (lt {LAS_LT}, ut {LAS_UT}, MAXS {LAS_MAXS:g}, "
               f"|Q'| = 8192 scaled) and PaGraph (local shuffling) where its partitioning finishes in the time cap; "
               f"{exp.dataset} stand-in at scale {', '.join(f'{s:g}' for s in scales)}. Host reads and modeled "
               f"loading time (Eq. 3) show what LAS buys. Paper: {PAPER_HARDWARE}. " + caption_hardware(runs))
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for run, topology, name, epochs, values in curves:
        ax.plot(epochs, values, "-" if "LAS" in name else "--", marker=".", label=f"{name} {topology}")
    ax.set_xlabel("epoch")
    ax.set_ylabel("training loss")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(exp.title, fontsize=9)
    return ReportArtifact(exp.artifact, exp.title, caption, table, notes, fig)
