"""Registries of implementations (by interface) and experiments (by id).

Modules under ``impls/`` and ``experiments/`` register themselves on import;
``discover()`` imports them all, then the modules named in ``$HARNESS_PLUGINS`` (comma-separated
import names: an implementation or experiment kept outside the tree, e.g. a test's toy). Heavy
optional packages (cupy, pylibwholegraph...) are imported inside functions, so discovery works on
any machine.

An implementation's entry (``ImplSpec``) carries what experiments, figures and tests need to use it
without naming it: its contract (the interface's ``typing.Protocol``), label, family (the system it
belongs to: its palette colour), variants (named settings of its options, each a series of its own),
traits (what it is, in the interface's vocabulary: experiments select by these) and needs (device,
GPUs, packages, P2P). Experiments enumerate ``series(interface, ...)``; none compares an
implementation's name to a literal (tests/test_registry.py reads their source for that).
"""

from __future__ import annotations

import difflib
import fnmatch
import importlib
import math
import os
import pkgutil
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, NamedTuple

from .errors import HarnessError
from .experiment import Experiment, module_id
from .needs import Needs

PLUGINS_ENV = "HARNESS_PLUGINS"


@dataclass(frozen=True)
class Interface:
    """What an interface promises: ``contract``, the Protocol its implementations' objects satisfy;
    ``factory``, the Protocol of the function registered for each (its arguments); ``traits``, the
    words its implementations may use to say what they are (trait -> meaning)."""

    name: str
    contract: type
    factory: type | None = None
    summary: str = ""
    traits: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Variant:
    """One named setting of an implementation's options, measured and drawn as a series of its own.

    ``options`` are factory keyword arguments and the point's parameters that say which variant a
    stored row measured (``ImplSpec.variant_of``); ``devices`` where it is a point of its own (a
    variant that differs from another only on GPUs: ``("cuda",)``); ``traits`` add to the
    implementation's; ``label`` names it in figures (default: the implementation's label and the
    variant's name)."""

    name: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""
    devices: tuple[str, ...] = ("cpu", "cuda")
    traits: frozenset[str] = frozenset()

    def __post_init__(self):
        object.__setattr__(self, "options", dict(self.options))
        object.__setattr__(self, "devices", tuple(self.devices))
        object.__setattr__(self, "traits", frozenset(self.traits))


PLAIN = Variant()


@dataclass(frozen=True)
class ImplSpec:
    interface: str
    name: str
    factory: Callable
    needs: Needs
    summary: str
    reimplements: str = ""        # the system whose policy this re-implements on the harness's code
    real_package: str = ""        # why that system's own package does not run here instead
    label: str = ""               # its name in tables, legends and `harness list` (default: name)
    family: str = "ours"          # the system it belongs to: a palette key (harness.palette.PALETTE)
    colour: str = ""              # its colour in figures (default: its family's)
    variants: tuple[Variant, ...] = (PLAIN,)
    traits: frozenset[str] = frozenset()
    order: int = 50               # where it stands among its interface's implementations (then name)
    contract: type | None = None  # the Protocol its objects satisfy (default: its interface's)
    labels: Mapping[str, str] = field(default_factory=dict)   # its names where a table or figure needs
    #                               another than ``label`` (``{"short": "hash"}``), by the word it uses
    unavailable: Callable[[str], str | None] | None = None    # why it cannot run on a device beyond needs

    @property
    def key(self) -> str:
        return f"{self.interface}.{self.name}"

    @property
    def title(self) -> str:
        return self.label or self.name

    @property
    def default(self) -> Variant:
        return self.variants[0]

    def what(self) -> str:
        """One line for `harness list` and report captions: re-implementation of what, and why not the real one."""
        if not self.reimplements:
            return ""
        return f"re-implementation of {self.reimplements}'s policy" + (f" ({self.real_package})" if self.real_package else "")

    def label_for(self, use: str) -> str:
        """Its name for ``use`` (a key of ``labels``), else its label."""
        return self.labels.get(use, self.title)

    def unavailable_reason(self, device: str) -> str | None:
        """Why it cannot run on ``device`` here beyond what ``needs`` says (a package that imports
        but lacks what it needs), or None."""
        return self.unavailable(device) if self.unavailable is not None else None

    def plot_colour(self) -> str | None:
        if self.colour:
            return self.colour
        from .palette import PALETTE

        return PALETTE.get(self.family)

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if v.name == name:
                return v
        known = ", ".join(repr(v.name) for v in self.variants)
        raise HarnessError(f"{self.key} has no variant {name!r} (variants: {known})")

    def variant_of(self, params: Mapping) -> Variant | None:
        """The variant a point or stored row with ``params`` measured: the one whose options equal
        ``params`` on every key any variant sets (absent, None and NaN alike), or None."""
        keys = {k for v in self.variants for k in v.options}
        given = {k: _value(params.get(k)) for k in keys}
        for v in self.variants:
            if all(given[k] == _value(v.options.get(k)) for k in keys):
                return v
        return None

    def has(self, trait: str, variant: Variant | None = None) -> bool:
        return trait in self.traits or (variant is not None and trait in variant.traits)


def _value(x):
    """A parameter as rows store it: None for absent, None and NaN (a pandas cell of a missing key)."""
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


class Series(NamedTuple):
    """One implementation in one of its variants: a line, bar or table row of a figure."""

    spec: ImplSpec
    variant: Variant

    @property
    def impl(self) -> str:
        return self.spec.name

    @property
    def key(self) -> str:
        """``impl (variant)``, or the name alone for an implementation without variants: the row
        name of tables."""
        return f"{self.spec.name} ({self.variant.name})" if self.variant.name else self.spec.name

    @property
    def title(self) -> str:
        """The implementation's label and the variant's name: ``WholeGraph (chunked)``."""
        return f"{self.spec.title} ({self.variant.name})" if self.variant.name else self.spec.title

    @property
    def label(self) -> str:
        """The variant's own label where it has one (``ours: chunked``), else its title."""
        return self.variant.label or self.title

    @property
    def family(self) -> str:
        return self.spec.family

    @property
    def colour(self) -> str | None:
        return self.spec.plot_colour()

    @property
    def options(self) -> dict:
        return dict(self.variant.options)

    @property
    def is_default(self) -> bool:
        return self.variant is self.spec.default

    def has(self, trait: str) -> bool:
        return self.spec.has(trait, self.variant)

    def unmet(self, device: str, world_size: int | None = None) -> str | None:
        """Why it cannot run on this machine with ``device`` and ``world_size`` ranks, or None."""
        from .needs import detect

        if not self.runs_on(device):
            return f"variant {self.variant.name} is a point on {'/'.join(self.variant.devices)} only"
        return self.spec.needs.unmet(detect(), device, world_size)

    def runs_on(self, device: str) -> bool:
        """Whether it is a point of its own on ``device`` (where its needs are unmet there, the
        point is a skipped row that says so)."""
        return device in self.variant.devices


_IMPLS: dict[tuple[str, str], ImplSpec] = {}
_INTERFACES: dict[str, Interface] = {}
_EXPERIMENTS: dict[str, Experiment] = {}
_DISCOVERED = False


def register_interface(name: str, contract: type, *, factory: type | None = None, summary: str = "",
                       traits: Mapping[str, str] | None = None) -> Interface:
    """Declare interface ``name``: the Protocol its implementations' objects satisfy (and that of
    their factories), and the traits its implementations may claim. Called from the interface's
    package (``impls/<interface>/__init__.py``), so that every implementation module finds it."""
    entry = Interface(name, contract, factory, summary, dict(traits or {}))
    known = _INTERFACES.get(name)
    if known is not None and known.contract is not contract:
        raise RuntimeError(f"interface {name} declared twice")
    _INTERFACES[name] = entry
    return entry


def interface(name: str) -> Interface | None:
    """The declared interface ``name`` (None for an interface that declares no contract)."""
    discover()
    return _INTERFACES.get(name)


def register_impl(interface: str, name: str, *, needs: Needs = Needs(), summary: str = "",
                  reimplements: str = "", real_package: str = "", label: str = "", family: str = "ours",
                  colour: str = "", variants: Iterable[Variant] = (), traits: Iterable[str] = (),
                  order: int = 50, contract: type | None = None, labels: Mapping[str, str] | None = None,
                  unavailable: Callable[[str], str | None] | None = None):
    """Class or factory decorator: ``@register_impl("gather", "p2p_shared", needs=..., label=...,
    family=..., variants=(Variant("chunked", {"mode": "chunked"}), ...), traits=(...))``.

    A re-implementation of another system's policy names it (``reimplements="Quiver"``) and says
    why that system's own package does not run here (``real_package``); `harness list` and report
    captions show both. ``traits`` (and each variant's) must be words the interface declares."""

    def deco(factory):
        key = (interface, name)
        if key in _IMPLS and _IMPLS[key].factory is not factory:
            raise RuntimeError(f"implementation {interface}.{name} registered twice")
        doc = summary or (factory.__doc__ or "").strip().splitlines()[0:1]
        spec = ImplSpec(interface, name, factory, needs, doc if isinstance(doc, str) else (doc[0] if doc else ""),
                        reimplements, real_package, label, family, colour, tuple(variants) or (PLAIN,),
                        frozenset(traits), order, contract, dict(labels or {}), unavailable)
        _check_spec(spec)
        _IMPLS[key] = spec
        return factory

    return deco


def _check_spec(spec: ImplSpec) -> None:
    names = [v.name for v in spec.variants]
    if len(set(names)) != len(names):
        raise RuntimeError(f"{spec.key}: variant names repeat ({', '.join(map(repr, names))})")
    declared = _INTERFACES.get(spec.interface)
    if declared is not None and declared.traits:
        unknown = (set(spec.traits) | {t for v in spec.variants for t in v.traits}) - set(declared.traits)
        if unknown:
            raise RuntimeError(f"{spec.key}: traits {sorted(unknown)} are not among interface "
                               f"{spec.interface}'s ({', '.join(sorted(declared.traits))})")


def contract_of(spec: ImplSpec) -> type | None:
    """The Protocol ``spec``'s objects satisfy: its own, else its interface's."""
    if spec.contract is not None:
        return spec.contract
    declared = _INTERFACES.get(spec.interface)
    return declared.contract if declared else None


def register_experiment(cls):
    """Class decorator: instantiates the experiment once and registers it by id. An experiment of
    module ``experiments/<paper>/<artifact>.py`` takes its id from that path."""
    derived = module_id(cls.__module__)
    if derived is not None:
        if cls.__dict__.get("id", derived) != derived:
            raise RuntimeError(f"{cls.__module__}.{cls.__name__} names id {cls.id!r}; its module path "
                               f"makes it {derived!r}")
        cls.id = derived
    if "." not in (cls.id or ""):
        raise RuntimeError(f"{cls.__module__}.{cls.__name__}: an experiment's id is 'paper.artifact', "
                           f"not {cls.id!r}")
    exp = cls()
    if exp.id in _EXPERIMENTS and type(_EXPERIMENTS[exp.id]) is not cls:
        raise RuntimeError(f"experiment {exp.id} registered twice")
    _EXPERIMENTS[exp.id] = exp
    return cls


BROKEN_MODULES: dict[str, str] = {}


def discover() -> None:
    global _DISCOVERED
    if _DISCOVERED:
        return
    for pkg_name in ("impls", "experiments"):
        pkg = importlib.import_module(pkg_name)
        for info in pkgutil.walk_packages(pkg.__path__, prefix=f"{pkg_name}.", onerror=_broken_package):
            try:
                importlib.import_module(info.name)
            except Exception as exc:    # one broken module must not take every experiment down
                _broken_module(info.name, exc)
    for name in plugin_modules():
        try:
            importlib.import_module(name)
        except Exception as exc:
            _broken_module(name, exc)
    _DISCOVERED = True


def plugin_modules() -> list[str]:
    """The modules ``$HARNESS_PLUGINS`` names (comma-separated): implementations and experiments
    kept outside impls/ and experiments/. Rank processes inherit the variable, so they find them too."""
    return [m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(",") if m.strip()]


def _broken_package(name: str) -> None:
    import sys

    _broken_module(name, sys.exc_info()[1] or ImportError(name))


def _broken_module(name: str, exc: BaseException) -> None:
    import warnings

    reason = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
    BROKEN_MODULES[name] = reason
    warnings.warn(f"harness: module {name} failed to import and is left out ({reason})", stacklevel=3)


def broken_modules() -> dict[str, str]:
    """Modules of impls/ and experiments/ that failed to import: name -> reason."""
    discover()
    return dict(BROKEN_MODULES)


def impl_specs(interface: str | None = None) -> list[ImplSpec]:
    discover()
    specs = [s for s in _IMPLS.values() if interface is None or s.interface == interface]
    return sorted(specs, key=lambda s: (s.interface, s.name))


def get_impl(interface: str, name: str) -> ImplSpec:
    discover()
    try:
        return _IMPLS[(interface, name)]
    except KeyError:
        known = ", ".join(s.name for s in impl_specs(interface)) or "none"
        raise HarnessError(f"unknown implementation '{name}' for interface '{interface}' "
                           f"(known: {known})") from None


def series(interface: str, *, device: str | None = None, traits: Iterable[str] = (),
           without: Iterable[str] = (), family: str | None = None, defaults_only: bool = False) -> list[Series]:
    """Every (implementation, variant) of ``interface`` in their order (``order``, then name, then
    the variants as declared): those that are points of their own on ``device`` (None: any), that
    have every trait of ``traits`` and none of ``without`` (the implementation's and the variant's
    together), of ``family`` (None: any); ``defaults_only``: each implementation's first variant."""
    want, avoid = set(traits), set(without)
    out = []
    for spec in sorted(impl_specs(interface), key=lambda s: (s.order, s.name)):
        if family is not None and spec.family != family:
            continue
        for variant in spec.variants[:1] if defaults_only else spec.variants:
            one = Series(spec, variant)
            if device is not None and not one.runs_on(device):
                continue
            if all(one.has(t) for t in want) and not any(one.has(t) for t in avoid):
                out.append(one)
    return out


def names(interface: str, **select) -> tuple[str, ...]:
    """The implementations of ``series(interface, **select)``, each once, in their order."""
    return tuple(dict.fromkeys(s.impl for s in series(interface, **select)))


def series_of(interface: str, impl: str, params: Mapping) -> Series | None:
    """The series a stored row (its implementation and parameters) belongs to, or None for an
    implementation no longer registered or a variant it no longer has."""
    discover()
    spec = _IMPLS.get((interface, impl))
    variant = spec.variant_of(params) if spec is not None else None
    return Series(spec, variant) if variant is not None else None


def lookup(interface: str, name: str) -> ImplSpec | None:
    """The implementation ``name`` of ``interface``, or None (a stored row of one since removed)."""
    discover()
    return _IMPLS.get((interface, name))


def reimplementation_note(interface: str, names) -> str:
    """One sentence naming the re-implementations among ``names`` of ``interface`` (for captions), or ""."""
    discover()
    specs = [_IMPLS[(interface, n)] for n in dict.fromkeys(names) if (interface, n) in _IMPLS]
    parts = [f"{s.name} is the harness's {s.what()}" for s in specs if s.reimplements]
    return ("Re-implementations, not the systems' own code: " + "; ".join(parts) + ".") if parts else ""


def reading_order(exp_id: str) -> tuple:
    """A paper's tables, then its figures, by number (Table 2 before Table 10, a panel of its own
    such as Fig. 6(b), ``fig6b``, right after Fig. 6), then the artifacts the paper does not number."""
    paper, _, artifact = exp_id.partition(".")
    match = re.fullmatch(r"(table|fig)(\d+)([a-z]?)", artifact)
    if match is None:
        return paper, 2, 0, artifact
    return paper, 0 if match[1] == "table" else 1, int(match[2]), artifact


def experiments() -> list[Experiment]:
    discover()
    return sorted(_EXPERIMENTS.values(), key=lambda e: reading_order(e.id))


def get_experiment(exp_id: str) -> Experiment:
    discover()
    try:
        return _EXPERIMENTS[exp_id]
    except KeyError:
        raise HarnessError(f"unknown experiment '{exp_id}' (see `python -m harness list`)") from None


def resolve(ids: list[str]) -> list[Experiment]:
    """Turn user ids into experiments, in the order given, without duplicates.

    Accepted forms: ``paper.artifact`` (``wholegraph.table1``), a bare artifact
    (``table1``: that artifact of every paper), a paper name (``wholegraph``: all of
    its artifacts), ``all``, and shell patterns (``xgnn.fig1*``).
    """
    everything = experiments()
    if not ids:
        raise HarnessError("name at least one experiment id (see `python -m harness list`)")
    by_id = {e.id: e for e in everything}
    chosen: list[Experiment] = []
    for raw in ids:
        token = raw.strip()
        matches = [by_id[i] for i in _matching(token, list(by_id))]
        if not matches:
            raise _unknown(token, list(by_id))
        for exp in matches:
            if exp not in chosen:
                chosen.append(exp)
    return chosen


def check_ids(ids: list[str]) -> None:
    """An id that names no experiment is an error before any experiment module is imported
    (importing them all, torch with them, takes seconds): the ids are read from the files under
    ``experiments/`` that register one, and from those registered in this process."""
    known = sorted(declared_ids() | set(_EXPERIMENTS))
    for raw in ids:
        if not _matching(raw.strip(), known):
            raise _unknown(raw.strip(), known)


def declared_ids() -> set[str]:
    """The ids of the experiment modules ``experiments/<paper>/<artifact>.py`` (those that call
    ``register_experiment``), found without importing them."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("experiments")
    out: set[str] = set()
    for root in (spec.submodule_search_locations or []) if spec else []:
        for module in sorted(Path(root).glob("*/*.py")):
            if not module.stem.startswith("_") and (module.parent / "__init__.py").exists():
                try:
                    if "@register_experiment" in module.read_text(encoding="utf-8"):
                        out.add(f"{module.parent.name}.{module.stem}")
                except OSError:
                    continue
    return out


def _matching(token: str, ids: list[str]) -> list[str]:
    """The ids among ``ids`` that ``token`` selects (resolve's forms), in their order."""
    if token == "all":
        return list(ids)
    if any(ch in token for ch in "*?["):
        return [i for i in ids if fnmatch.fnmatchcase(i, token)]
    if "." in token:
        return [i for i in ids if i == token]
    return [i for i in ids if i.partition(".")[2] == token] or [i for i in ids if i.partition(".")[0] == token]


def _unknown(token: str, ids: list[str]) -> HarnessError:
    near = difflib.get_close_matches(token, ids, n=4, cutoff=0.6)
    artifacts = difflib.get_close_matches(token, sorted({i.partition(".")[2] for i in ids}), n=2, cutoff=0.8)
    near += [i for i in ids if i not in near and (token == i.partition(".")[2].rstrip("0123456789")
                                                 or i.partition(".")[2] in artifacts)]
    hint = f"; did you mean {', '.join(near[:6])}?" if near else ""
    if BROKEN_MODULES:
        hint += "; modules that failed to import: " + "; ".join(
            f"{name} ({why})" for name, why in sorted(BROKEN_MODULES.items()))
    return HarnessError(f"unknown experiment '{token}'{hint} (see `python -m harness list`)")
