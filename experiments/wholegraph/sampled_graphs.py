"""The graphs of WholeGraph's sampling experiments (wholegraph.sampling and wholegraph.unique):
their names, short labels and default stand-in scales."""

from __future__ import annotations

from harness.argtypes import BadValue, dataset_names

# default stand-in scales: (cuda, cuda --quick, cpu)
SCALES = {"ogbn-products": (1.0, 0.25, 0.002), "ogbn-papers100M": (0.25, 0.05, 0.0002)}
SHORT = {"ogbn-products": "products", "ogbn-papers100M": "papers100M"}


def sampling_datasets(text: str) -> tuple[str, ...]:
    """Registry datasets (aliases resolved) and synthetic ``uniform:NODES:DEGREE`` graphs."""
    from ..kit.samplers import is_uniform, parse_uniform

    names = [x.strip() for x in text.split(",") if x.strip()]
    out = []
    for name in names:
        if is_uniform(name):
            parse_uniform(name)
            out.append(name)
        else:
            out.extend(dataset_names(name))
    if not out:
        raise BadValue("expected at least one dataset name")
    return tuple(out)


def short_name(name: str) -> str:
    from ..kit.samplers import is_uniform, parse_uniform

    if is_uniform(name):
        nodes, degree = parse_uniform(name)
        return f"uniform random {nodes / 1e6:g}M nodes, degree {degree} (synthetic)"
    return SHORT.get(name, name)


def default_scale(name: str, cfg) -> float:
    """The stand-in's default scale on this run's device."""
    cuda, quick, cpu = SCALES.get(name, (1.0, 0.1, 0.001))
    return (quick if cfg.quick else cuda) if cfg.device == "cuda" else cpu
