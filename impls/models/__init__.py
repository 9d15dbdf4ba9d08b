"""Interface `models`: GNN models over sampled blocks (GCN, GraphSAGE-mean, GAT, PinSAGE).

Every implementation is built as ``factory(in_dim, hidden, out_dim, num_layers,
backend="native", heads=4, dropout=0.0, **options) -> torch.nn.Module`` and used as
``model(blocks, x) -> logits``: ``blocks`` is the list of :class:`impls.core.blocks.Block`
of one mini-batch (``blocks[0]`` the outermost hop, one block per layer), ``x`` the features
of ``blocks[0].src_ids`` in that order, and the logits are those of ``blocks[-1]``'s dst nodes
(the seeds), in their order.

Backends (``backend=``):

* ``"native"``: layers over the block CSR in plain torch (layers.py, ops.py): g-SpMM for
  aggregation, g-SDDMM + edge softmax for GAT attention, the duplicate count of the
  append-unique op for the transposed CSR and WholeGraph's atomic-free backward; runs
  anywhere torch runs.
* ``"pyg"``: the same models from ``torch_geometric.nn`` layers (pyg.py), fed with
  ``Block.edge_index()`` and the bipartite sizes; needs ``torch_geometric`` (the ``*_pyg``
  registry entries declare it, so the runner records a skipped row where it is missing).
* ``"dgl"``: GCN, GraphSAGE and GAT from ``dgl.nn`` (GraphConv, SAGEConv, GATConv) on DGL
  blocks made from ours (dgl.py); needs DGL, and a CUDA build of it on GPUs.

The backends compute the same function; the PyG layers have the native parameter names
(``pyg_model.load_state_dict(native_model.state_dict())`` copies weights across), the DGL
layers DGL's (``dgl.load_native_state`` copies them).

Options (others are ignored, so one option dict can serve every model):
``norm`` (GCN: ``"sym"`` = PyG GCNConv on the block [default], ``"both"`` = DGL GraphConv
norm='both' with the duplicate count as source degree, ``"right"`` = mean over N(i) + {i}),
``attn_dropout``, ``negative_slope``, ``head_dim`` (GAT; default ``hidden // heads``),
``activation`` (``relu``/``elu``/``none``; default ReLU, ELU for GAT), and for the native
backend ``impl`` (``auto``/``sparse``/``segment``), ``backward`` (``auto``/``atomic``/
``dup_split``/``transpose``), ``sddmm`` (``auto``/``sampled``/``gather``), ``chunk_elems``
(see ops.py).

``PAPER_MODELS`` records the papers' model settings (layers, hidden width, heads, fanouts
and batch size as the papers state them).
"""

from __future__ import annotations

from harness.errors import HarnessError
from harness.needs import Needs
from harness.registry import register_impl


KINDS = ("gcn", "sage", "gat", "pinsage")
BACKENDS = ("native", "pyg", "dgl")
PYG_NEEDS = Needs(packages=("torch_geometric",))
DGL_NEEDS = Needs(packages=("dgl",))

# Fanouts as each paper lists them.  WholeGraph: 30 per layer (order does not matter).
# XGNN: "15, 10, 5 (10, 25)" for GCN (GraphSAGE), from the seeds outwards; PinSAGE samples
# 5 neighbors per layer by the top visit counts of 4 random walks of length 3.
PAPER_MODELS = {
    "wholegraph": {
        "gcn": dict(num_layers=3, hidden=256, fanouts=(30, 30, 30), batch_size=512),
        "sage": dict(num_layers=3, hidden=256, fanouts=(30, 30, 30), batch_size=512),
        "gat": dict(num_layers=3, hidden=256, heads=4, fanouts=(30, 30, 30), batch_size=512),
    },
    "xgnn": {
        "gcn": dict(num_layers=3, hidden=256, fanouts=(15, 10, 5), batch_size=6000),
        "sage": dict(num_layers=2, hidden=256, fanouts=(10, 25), batch_size=6000),
        "pinsage": dict(num_layers=3, hidden=256, fanouts=(5, 5, 5), random_walks=4,
                        walk_length=3, batch_size=6000),
    },
}


def needs_for(backend: str) -> Needs:
    """What a model of this backend needs on this machine."""
    if backend not in BACKENDS:
        raise HarnessError(f"unknown model backend '{backend}' (known: {', '.join(BACKENDS)})")
    return {"pyg": PYG_NEEDS, "dgl": DGL_NEEDS}.get(backend, Needs())


def build(kind: str, in_dim: int, hidden: int, out_dim: int, num_layers: int,
          backend: str = "native", heads: int = 4, dropout: float = 0.0, **options):
    """Build model ``kind`` (gcn, sage, gat, pinsage) with the given backend."""
    if kind not in KINDS:
        raise HarnessError(f"unknown model '{kind}' (known: {', '.join(KINDS)})")
    if options.get("norm", "sym") not in ("sym", "both", "right"):
        raise HarnessError(f"GCN norm must be sym, both or right, not {options['norm']!r}")
    known = {"norm", "attn_dropout", "negative_slope", "head_dim", "activation"}
    if backend == "native":
        from .nets import build_native

        known |= {"impl", "backward", "sddmm", "chunk_elems"}
        kw = {k: v for k, v in options.items() if k in known}
        return build_native(kind, in_dim, hidden, out_dim, num_layers, heads=heads,
                            dropout=dropout, **kw)
    problem = needs_for(backend).unmet(_caps())
    if problem:
        raise HarnessError(f"model backend '{backend}' cannot run here: {problem}")
    if backend == "dgl":
        from .dgl import build_dgl

        kw = {k: v for k, v in options.items() if k in known}
        return build_dgl(kind, in_dim, hidden, out_dim, num_layers, heads=heads, dropout=dropout, **kw)
    from .pyg import build_pyg

    kw = {k: v for k, v in options.items() if k in known}
    return build_pyg(kind, in_dim, hidden, out_dim, num_layers, heads=heads, dropout=dropout, **kw)


def _caps():
    from harness.needs import detect

    return detect()


def _factory(kind: str, fixed_backend: str | None = None):
    def make(in_dim, hidden, out_dim, num_layers, backend="native", heads=4, dropout=0.0, **options):
        return build(kind, in_dim, hidden, out_dim, num_layers,
                     backend=fixed_backend or backend, heads=heads, dropout=dropout, **options)

    make.__name__ = f"make_{kind}" + (f"_{fixed_backend}" if fixed_backend else "")
    return make


_SUMMARIES = {
    "gcn": "GCN over sampled blocks (PyG GCNConv normalization on the block)",
    "sage": "GraphSAGE, mean aggregation (PyG SAGEConv: W_l mean + W_r self)",
    "gat": "GAT, 4 heads: g-SDDMM scores, edge softmax, g-SpMM; concat hidden, mean last",
    "pinsage": "PinSAGE: importance-weighted mean by random-walk visit counts (block.edge_weight)",
}

make_gcn = register_impl("models", "gcn", needs=Needs(),
                         summary=_SUMMARIES["gcn"] + "; backend native|pyg")(_factory("gcn"))
make_sage = register_impl("models", "sage", needs=Needs(),
                          summary=_SUMMARIES["sage"] + "; backend native|pyg")(_factory("sage"))
make_gat = register_impl("models", "gat", needs=Needs(),
                         summary=_SUMMARIES["gat"] + "; backend native|pyg")(_factory("gat"))
make_pinsage = register_impl("models", "pinsage", needs=Needs(),
                             summary=_SUMMARIES["pinsage"] + "; backend native|pyg")(_factory("pinsage"))
# The PyG backend under its own names, so that `harness list` and the runner see its Needs.
make_gcn_pyg = register_impl("models", "gcn_pyg", needs=PYG_NEEDS,
                             summary="PyG GCNConv layers: " + _SUMMARIES["gcn"])(_factory("gcn", "pyg"))
make_sage_pyg = register_impl("models", "sage_pyg", needs=PYG_NEEDS,
                              summary="PyG SAGEConv layers: " + _SUMMARIES["sage"])(_factory("sage", "pyg"))
make_gat_pyg = register_impl("models", "gat_pyg", needs=PYG_NEEDS,
                             summary="PyG GATConv layers: " + _SUMMARIES["gat"])(_factory("gat", "pyg"))
make_pinsage_pyg = register_impl("models", "pinsage_pyg", needs=PYG_NEEDS,
                                 summary="PyG MessagePassing PinSAGE layer: " + _SUMMARIES["pinsage"]
                                 )(_factory("pinsage", "pyg"))
