"""ICS'22's settings (Sec. 5.1) and how every placement figure names, orders and colours a policy."""

from __future__ import annotations

# --- ICS'22 Sec. 5.1 settings ------------------------------------------------------------
NUM_LAYERS = 3                     # "All the GNNs have three convolutional layers"
PAPER_LAYER_NODES = 8192           # "The number of sampled nodes in each layer is set to 8192"
PAPER_Q_SIZE = 8192                # "set the size of neighbor set Q'_l to 8192 in all layers"
PAPER_BATCH = {"reddit": 512, "products": 512, "yelp": 2048, "papers100M": 2048, "mag240m": 2048}
LAS_LT, LAS_UT, LAS_MAXS = 0.15, 0.2, 8.0
PAIR_TOPOLOGIES = ("(2+2)GPU", "(2*4)GPU")
QUICK_PAGRAPH_CAP_S = 5.0          # --quick: PaGraph's quadratic partitioning gets this long
MEASURABLE_TOPOLOGIES = ("2GPU", "(2+2)GPU", "4GPU")   # on the lent 2- and 4-GPU H200 machines

def paper_alpha(topology: str) -> float:
    """ICS'22 Sec. 5.1: alpha = 0.2 on '(2+2)GPU' and '(2*4)GPU', 0 on '2GPU', '4GPU', '8GPU'."""
    return 0.2 if topology in PAIR_TOPOLOGIES else 0.0


def policy_label(impl: str, las: bool = False) -> str:
    """A policy's name in every placement figure: its registry label (``NAIVE``, ``Our``), ``+LAS``
    with locality-aware sampling."""
    from harness import registry

    spec = registry.lookup("placement", impl)
    return (spec.title if spec is not None else impl) + ("+LAS" if las else "")


def policy_colour(name: str, default: str | None = None) -> str | None:
    """A policy's colour in every placement figure, by its name there: its registry entry's (its own
    or its system's palette colour), ICS'22's palette's for a name no entry has (Our+LAS), else
    ``default``."""
    from harness import registry

    from . import PALETTE

    spec = next((s for s in registry.impl_specs("placement") if s.title == name), None)
    return (spec.plot_colour() if spec is not None else None) or PALETTE.get(name, default)


# the order bars stand in, in every placement figure
POLICY_ORDER = ("NAIVE", "RAND", "METIS", "PG (re-impl.)", "Our", "Our+LAS", "Clique", "Solver")
