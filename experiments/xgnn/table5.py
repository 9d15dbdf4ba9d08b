"""XGNN Table 5: WholeGraph vs XGNN: S, E, T, E2E and total GPU memory.

The paper (section 6.10) trains GCN on TW and PA and GraphSAGE on UK on a fully connected 8x A100
machine, both systems on DGL's backend: similar performance (XGNN stores almost the same topology
and features as WholeGraph on a symmetric topology), XGNN's sampling stage faster (WholeGraph's
PyTorch DataLoader adds latency), and XGNN using less GPU memory in total (102-120 GB vs 130-143
GB). Here: the harness's WholeGraph pipeline (CSR and features sharded over the GPUs, path-doubling
sampler, one-kernel gather; the other helper's ``wholegraph``) and XGNN, both with XGNN's model
settings, on every GPU of the machine, without a memory budget (everything fits on the GPUs, as on
the A100s). Memory: every GPU's stores plus its training peak, summed over the GPUs (the device's
own used figure too on CUDA).
"""

from __future__ import annotations

import statistics

from harness.experiment import PaperValue, Param
from harness.registry import register_experiment
from harness.report import ReportArtifact
from harness.tables import caption_hardware, skip_notes

from .training import (MODEL_SHORT, SHORT, SYSTEMS, XGNNTraining, budget_caption, cell, collect, combo_list,
                       common_parameters, datasets_caption, drop_single, fmt, machine_labels, ratio,
                       settings_caption, system_list)

SYSTEMS5 = ("wholegraph", "xgnn")
COMBOS = (("gcn", "twitter-2010"), ("gcn", "ogbn-papers100M"), ("sage", "uk-2006-05"))
# XGNN Table 5 (8x A100): {(model, dataset): {system: (S, E, T, E2E, Mem GB)}}
TABLE5 = {
    ("gcn", "twitter-2010"): {"wholegraph": (0.11, 0.07, 0.10, 0.23, 138), "xgnn": (0.02, 0.02, 0.10, 0.12, 102)},
    ("gcn", "ogbn-papers100M"): {"wholegraph": (0.33, 0.06, 0.27, 0.55, 130), "xgnn": (0.05, 0.03, 0.27, 0.29, 105)},
    ("sage", "uk-2006-05"): {"wholegraph": (0.24, 0.02, 0.10, 0.35, 143), "xgnn": (0.03, 0.02, 0.10, 0.10, 120)},
}
METRICS = (("sample_time", "S"), ("gather_time", "E"), ("train_time", "T"), ("epoch_time", "E2E"))
PAPER_HARDWARE5 = "8x A100 over NVSwitch (fully connected), DGL backend for both systems"


def paper_values() -> tuple[PaperValue, ...]:
    out = []
    for (model, ds), per_sys in TABLE5.items():
        for system, cells in per_sys.items():
            params = {"system": system, "dataset": ds, "model": model}
            for (metric, _), v in zip(METRICS, cells[:4]):
                out.append(PaperValue("Table 5", SYSTEMS[system].impl, params, metric, v, "s"))
            out.append(PaperValue("Table 5", SYSTEMS[system].impl, params, "memory_total_gpus", cells[4], "GB",
                                  note="total GPU memory over the 8 GPUs"))
    return tuple(out)


@register_experiment
class Table5(XGNNTraining):
    id = "xgnn.table5"
    artifact = "table5"
    title = "XGNN Table 5: WholeGraph vs XGNN (S, E, T, E2E, total GPU memory)"
    impls = ("wholegraph", "xgnn")
    paper_values = paper_values()
    parameters = common_parameters(
        combos=Param(COMBOS, combo_list, "model:dataset pairs (paper: gcn:TW, gcn:PA, sage:UK)"),
        systems=Param(SYSTEMS5, system_list(*SYSTEMS5), "systems: wholegraph, xgnn"),
        budget=Param("none", common_parameters()["budget"].parse, "GPU memory budget (default none: the A100s hold "
                                                                    "everything)"),
    )

    def points(self, cfg):
        world = self.world(cfg)
        for model, ds in self.param(cfg, "combos"):
            for system in self.param(cfg, "systems"):
                yield self.point(system, ds, model, world, cfg)

    def report(self, rows, runs) -> ReportArtifact:
        import matplotlib.pyplot as plt
        import pandas as pd

        labels = machine_labels(rows, runs)
        records = collect(rows, prefer=self.id)
        groups = {}
        for rec in records:
            p = rec["params"]
            groups.setdefault((labels.get(rec["run_id"], rec["run_id"]), rec["world"], p["model"], p["dataset"]),
                              {})[p["system"]] = rec
        out, notes, e2e_ratio = [], [], []
        per_combo: dict[tuple, list[tuple[str, float]]] = {}     # (model, dataset) -> [(machine, WG/XGNN E2E)]
        latest: dict[tuple, tuple] = {}          # (GPUs, model, dataset) -> (run id, machine, E2E, memory, T)
        for (machine, world, model, ds), systems in groups.items():
            paper = TABLE5.get((model, ds), {})
            for system in SYSTEMS5:
                rec = systems.get(system)
                if rec is None:
                    continue
                row = {"Machine": machine, "GPUs": world, "Model+DS": f"{MODEL_SHORT[model]}+{SHORT.get(ds, ds)}",
                       "System": SYSTEMS[system].label}
                for metric, col in METRICS:
                    row[f"{col} s"] = fmt(cell(rec, metric))
                row["Mem GiB"] = fmt(cell(rec, "memory_total_gpus"))
                used = rec["extra"].get("memory_total_gpus", {}).get("device_used_gib_summed")
                row["device used GiB"] = fmt(used)
                pv = paper.get(system)
                for (_, col), v in zip(METRICS, pv[:4] if pv else (None,) * 4):
                    row[f"paper {col}"] = v
                row["paper Mem GB"] = pv[4] if pv else None
                row["reduced fidelity"] = rec.get("fidelity", {}).get("note")
                out.append(row)
            wg, xg = systems.get("wholegraph"), systems.get("xgnn")
            if wg and xg:
                e = ratio(cell(wg, "epoch_time"), cell(xg, "epoch_time"))
                m = ratio(cell(xg, "memory_total_gpus"), cell(wg, "memory_total_gpus"))
                s = ratio(cell(wg, "sample_time"), cell(xg, "sample_time"))
                run_id = max(r["run_id"] for r in (wg, xg))
                key = (world, model, ds)
                if e is not None and (key not in latest or run_id > latest[key][0]):
                    t = ratio(cell(wg, "train_time"), cell(xg, "train_time"))
                    latest[key] = (run_id, machine, e, m, t)
                if e is not None:
                    e2e_ratio.append(e)
                    per_combo.setdefault((model, ds), []).append((machine, e))
                    pe = paper["wholegraph"][3] / paper["xgnn"][3] if paper else None
                    pm = paper["xgnn"][4] / paper["wholegraph"][4] if paper else None
                    notes.append(f"{MODEL_SHORT[model]}+{SHORT.get(ds, ds)} ({machine}): WholeGraph / XGNN E2E "
                                 f"{e:.2f}x" + (f" (paper {pe:.2f}x)" if pe else "")
                                 + (f", XGNN / WholeGraph memory {m:.2f}" if m is not None else "")
                                 + (f" (paper {pm:.2f})" if pm else "")
                                 + (f", sampling {s:.2f}x" if s is not None else ""))
        table = pd.DataFrame.from_records(out)
        headline, status = "", "measured"
        if table.empty:
            table = pd.DataFrame({"note": ["no Table 5 rows"]})
        else:
            table = drop_single(table, ("Machine", "GPUs"))
            table = table[[c for c in table.columns if table[c].notna().any() or c.startswith("paper")]]
        if latest:
            # judged on each model+dataset's latest run; earlier runs stay listed with their notes
            e_new = [v[2] for v in latest.values()]
            m_new = [v[3] for v in latest.values() if v[3] is not None]
            t_new = [v[4] for v in latest.values() if v[4] is not None]
            newest = ", ".join(sorted({v[1] for v in latest.values()}))
            headline = f"latest ({newest}): WholeGraph / XGNN E2E {min(e_new):.2f}-{max(e_new):.2f}x (paper 1.9-3.5x)"
            if m_new:
                headline += f", XGNN / WholeGraph memory {min(m_new):.2f}-{max(m_new):.2f} (paper 0.74-0.84)"
            headline += f"; all runs E2E {min(e2e_ratio):.2f}-{max(e2e_ratio):.2f}x"
            if t_new:
                notes.append(f"Latest runs ({newest}): the training stage T is the same work in both systems (the same "
                             f"model on the same number of seeds per batch), yet WholeGraph / XGNN T is {min(t_new):.2f}-"
                             f"{max(t_new):.2f}x: differences of that size in E2E are within the launch-to-launch "
                             f"spread (xgnn.fig10 shows identical configurations differing by up to 1.35x in T)")
            spread = []
            for (model, ds), values in per_combo.items():
                if len(values) >= 3:
                    es = sorted(v for _, v in values)
                    spread.append(f"{MODEL_SHORT[model]}+{SHORT.get(ds, ds)} median {statistics.median(es):.2f}x "
                                  f"({es[0]:.2f}-{es[-1]:.2f}x over {len(es)} runs)")
            if spread:
                notes.append("WholeGraph / XGNN E2E over every run (each run launches both systems once; runs differ "
                             "in order of the systems, one launch per point, synced epochs): " + "; ".join(spread))
            ok_time = all(x >= 1 for x in e_new)
            ok_mem = all(x <= 1.05 for x in m_new) if m_new else False
            status = "reproduced" if ok_time and ok_mem else "partly" if ok_time or ok_mem else "not reproduced"
        notes.append("Paper (section 6.10): the two systems perform similarly because XGNN stores almost the same "
                     "topology and features as WholeGraph on a symmetric topology; XGNN's sampling stage is faster "
                     "(WholeGraph's PyTorch DataLoader adds latency) and it uses less GPU memory.")
        notes.append("S, E, T from the synchronized epochs (the first synced_epochs, median); E2E from the later ones (XGNN's "
                     "sampling pipelined on a sampler thread; WholeGraph's pipeline samples in the training loop). "
                     "Mem: per GPU the stores (this GPU's part of topology and features) plus the training peak "
                     "(model, optimizer, mini-batches, activations: impls/pipelines/base.py), summed over the GPUs; "
                     "'device used' is the devices' own figure (CUDA context, NCCL, allocator caches included), the "
                     "one nvidia-smi shows.")
        if any(r.get("device") == "cpu" for r in records):
            notes.append("CPU ranks: host memory stands in for the GPUs; WholeGraph's CSR is then one host copy "
                         "shared by the ranks (its sharded CSR needs CUDA ranks).")
        notes += skip_notes(rows, labels)
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        if "E2E s" in table:
            plot = table.copy()
            for col in ("E2E s", "Mem GiB"):
                plot[col] = pd.to_numeric(plot[col], errors="coerce")
            for ax, col, title in ((axes[0], "E2E s", "E2E seconds per epoch"), (axes[1], "Mem GiB",
                                                                               "GPU memory, all GPUs (GiB)")):
                pivot = plot.pivot_table(index="Model+DS", columns="System", values=col, aggfunc="first")
                if not pivot.dropna(how="all").empty:
                    pivot.plot.bar(ax=ax)
                ax.set_title(title)
        fig.tight_layout()
        caption = ("Epoch breakdown (S, E, T), end-to-end epoch time and total GPU memory of the WholeGraph pipeline "
                   "and XGNN, data-parallel over every GPU; the paper's Table 5 beside "
                   f"({PAPER_HARDWARE5}). GPU memory budget: {budget_caption(records)}. Datasets: "
                   f"{datasets_caption(records)}. Models: {settings_caption(records)}. " + caption_hardware(runs))
        return ReportArtifact("table5", "XGNN Table 5: WholeGraph vs XGNN", caption, table, notes, fig,
                              headline=headline, status=status)

