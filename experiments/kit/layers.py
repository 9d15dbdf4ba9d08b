"""Time one layer's forward + backward over a synthetic sampled block, for every native op
implementation (``impl`` x ``backward``) and PyG's layer, to choose the defaults per device.

    python -m experiments.kit.layers --device cuda --dst 16000 --src 480000 --fanout 30 --dim 256

The block has ``dst`` dst nodes with ``fanout`` distinct random neighbors each among ``src``
sources (the shape of the middle block of a [30,30,30] sample with batch 512).  Prints one
line per (layer, variant): median milliseconds per forward + backward step and the spread.
"""

from __future__ import annotations

import argparse

import torch

from harness.timing import measure, timer_for

VARIANTS = (("sparse", "transpose"), ("sparse", "atomic"), ("segment", "atomic"),
            ("segment", "dup_split"), ("segment", "transpose"))
# GAT's attention weights need a g-SDDMM in the backward: both ways, on the default g-SpMM
GAT_SDDMM_VARIANTS = ("sampled", "gather")


def synthetic_block(num_dst: int, num_src: int, fanout: int, device: str = "cpu", seed: int = 0):
    from impls.core.blocks import Block

    gen = torch.Generator().manual_seed(seed)
    indices = torch.randint(0, num_src, (num_dst * fanout,), generator=gen)
    indptr = torch.arange(0, num_dst * fanout + 1, fanout, dtype=torch.int64)
    dup = torch.bincount(indices, minlength=num_src)
    return Block(indptr, indices, torch.arange(num_src), num_dst, dup).to(device)


def bench(kinds=("sage", "gcn", "gat"), *, device: str = "cpu", num_dst: int = 2000,
          num_src: int = 30000, fanout: int = 10, dim: int = 64, heads: int = 4,
          repeats: int = 10, warmup: int = 3, pyg: bool = True) -> list[dict]:
    from impls.models import build

    block = synthetic_block(num_dst, num_src, fanout, device)
    x = torch.randn(num_src, dim, device=device, requires_grad=True)
    rows = []
    timer = timer_for("cuda" if device.startswith("cuda") else "cpu")
    for kind in kinds:
        variants = [("native", dict(impl=i, backward=b)) for i, b in VARIANTS]
        if kind == "gat":
            variants[:1] = [("native", dict(impl="sparse", backward="transpose", sddmm=d))
                            for d in GAT_SDDMM_VARIANTS]
        # GAT as its hidden layers: `heads` heads of dim // heads (WholeGraph's split of 256)
        out_dim = max(1, dim // heads) if kind == "gat" else dim
        if pyg:
            try:
                import torch_geometric  # noqa: F401

                variants.append(("pyg", {}))
            except ImportError:
                pass
        for backend, opts in variants:
            torch.manual_seed(0)
            model = build(kind, dim, dim, out_dim, 1, backend=backend, heads=heads, **opts).to(device)

            def step():
                model.zero_grad(set_to_none=True)
                x.grad = None
                model([block], x).sum().backward()

            stats = measure(step, timer=timer, warmup=warmup, repeats=repeats)
            name = backend if backend == "pyg" else "/".join(opts[k] for k in ("impl", "backward", "sddmm") if k in opts)
            rows.append(dict(layer=kind, variant=name, ms=stats.median * 1e3,
                             p10=stats.p10 * 1e3, p90=stats.p90 * 1e3))
    return rows


def layer_profile(model, blocks, x: torch.Tensor, *, timer, warmup: int = 2, repeats: int = 5) -> list[dict]:
    """Each layer of ``model`` alone on one mini-batch (``blocks``, input features ``x``): forward +
    backward milliseconds (median of ``repeats``), its block's edges and nodes and its widths; for
    PyG's normalizing GCNConv also the normalization it computes inside the layer
    (:func:`impls.models.pyg.gcn_normalization`) timed alone. A layer's input is what the layers
    before it give (without gradient); layers after the first take the gradient of their input too,
    as in training."""
    from impls.models.nets import _ACTS

    act = _ACTS[model.activation]
    inputs, widths, h = [], [], x
    with torch.no_grad():
        for l, block in enumerate(blocks):
            inputs.append(h)
            h = model.layer(l, block, h)
            widths.append(int(h.shape[1]))
            if l < len(blocks) - 1 and act is not None:
                h = act(h)
    out = []
    for l, (block, h_in, width) in enumerate(zip(blocks, inputs, widths)):
        h = h_in.detach().requires_grad_(l > 0)

        def step():
            model.zero_grad(set_to_none=True)
            h.grad = None
            model.layer(l, block, h).sum().backward()

        stats = measure(step, timer=timer, warmup=warmup, repeats=repeats)
        row = {"layer": l, "ms": stats.median * 1e3, "p10_ms": stats.p10 * 1e3, "p90_ms": stats.p90 * 1e3,
               "edges": int(block.num_edges), "num_src": int(block.num_src), "num_dst": int(block.num_dst),
               "in_dim": int(h.shape[1]), "out_dim": width}
        if getattr(model, "backend", "") == "pyg" and model.kind == "gcn":
            from impls.models.pyg import gcn_normalization

            with torch.no_grad():
                norm = measure(lambda: gcn_normalization(model, l, block, h), timer=timer, warmup=warmup,
                               repeats=repeats)
            row["norm_ms"] = norm.median * 1e3
        out.append(row)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dst", type=int, default=16000)
    p.add_argument("--src", type=int, default=480000)
    p.add_argument("--fanout", type=int, default=30)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", default="sage,gcn,gat")
    p.add_argument("--repeats", type=int, default=10)
    args = p.parse_args(argv)
    rows = bench(tuple(args.layers.split(",")), device=args.device, num_dst=args.dst,
                 num_src=args.src, fanout=args.fanout, dim=args.dim, heads=args.heads,
                 repeats=args.repeats)
    print(f"{'layer':6} {'variant':20} {'ms':>9} {'p10':>9} {'p90':>9}")
    for r in rows:
        print(f"{r['layer']:6} {r['variant']:20} {r['ms']:9.3f} {r['p10']:9.3f} {r['p90']:9.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
