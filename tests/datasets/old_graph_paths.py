"""The graph loaders harness.graphs.load replaces, read field by field (removed with them)."""

from __future__ import annotations

from types import SimpleNamespace

from tests.datasets.graph_digests import FIELDS, UNIFORM, field_digests, small_scale


def context():
    from harness.config import RunConfig
    from harness.experiment import RunContext

    return RunContext(RunConfig(device="cpu", seed=0))


def old_fields(view: str, name: str, scale: float) -> dict:
    from harness import datasets

    ctx = context()
    if view == "host":
        from impls.pipelines.base import PipelineConfig, load_graph

        graph = load_graph(None, PipelineConfig(dataset=name, scale=scale, seed=0, num_layers=1, fanouts=(1,)))
        standin = datasets.load(name, scale=scale, seed=0, data_root=None, prefer_real=False, device="cpu")
        for field in FIELDS["host"]:               # the dataset tables' and Fig. 10's direct call
            assert field_digests({field: getattr(standin, field)}) == field_digests({field: getattr(graph, field)})
        tensors = standin.tensors()
        for field in ("indptr", "indices", "train_idx"):
            assert field_digests({field: tensors[field].numpy()}) == field_digests({field: getattr(graph, field)})
        return {f: getattr(graph, f) for f in FIELDS[view]}
    if view == "structure":
        from impls.sampling.bench import load_graph

        graph = load_graph(ctx, name, scale)
        return {f: getattr(graph, f) for f in FIELDS[view]}
    if view == "fullbatch":
        from experiments.mggcn.common import load_graph

        graph = load_graph(SimpleNamespace(registry=name), scale, ctx)
        values = {f: getattr(graph, f) for f in FIELDS[view] if f not in ("is_standin", "scale")}
        return {**values, "is_standin": graph.meta["is_standin"], "scale": graph.meta["scale"]}
    if view == "placement":
        from experiments.placement.common import load_graph

        graph = load_graph(ctx, name, scale)
        return {f: graph.description if f == "description" else getattr(graph, f) for f in FIELDS[view]}
    raise ValueError(view)


def old_digests() -> dict:
    from harness import datasets
    from harness.datasets.plan import GENERATOR_VERSION

    scales = {spec.name: small_scale(spec.name) for spec in datasets.list_datasets()}
    views = {view: {} for view in FIELDS}
    for name, scale in scales.items():
        for view in FIELDS:
            try:
                views[view][name] = field_digests(old_fields(view, name, scale))
            except ValueError as exc:              # full-batch training needs single-label classes
                views[view][name] = {"error": f"{type(exc).__name__}: {exc}"}
    uniform, scale = UNIFORM
    views["structure"][uniform] = field_digests(old_fields("structure", uniform, scale))
    return {"generator_version": GENERATOR_VERSION, "edges": 2e4, "scales": {**scales, uniform: scale},
            "views": views}


if __name__ == "__main__":
    from tests.datasets.graph_digests import write

    write(old_digests())
