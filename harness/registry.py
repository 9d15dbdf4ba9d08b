"""Registries of implementations (by interface) and experiments (by id).

Modules under ``impls/`` and ``experiments/`` register themselves on import;
``discover()`` imports them all. Heavy optional packages (cupy, pylibwholegraph...)
are imported inside functions, so discovery works on any machine.
"""

from __future__ import annotations

import difflib
import fnmatch
import importlib
import pkgutil
import re
from dataclasses import dataclass
from typing import Callable

from .errors import HarnessError
from .experiment import Experiment, module_id
from .needs import Needs


@dataclass(frozen=True)
class ImplSpec:
    interface: str
    name: str
    factory: Callable
    needs: Needs
    summary: str
    reimplements: str = ""        # the system whose policy this re-implements on the harness's code
    real_package: str = ""        # why that system's own package does not run here instead

    @property
    def key(self) -> str:
        return f"{self.interface}.{self.name}"

    def what(self) -> str:
        """One line for `harness list` and report captions: re-implementation of what, and why not the real one."""
        if not self.reimplements:
            return ""
        return f"re-implementation of {self.reimplements}'s policy" + (f" ({self.real_package})" if self.real_package else "")


_IMPLS: dict[tuple[str, str], ImplSpec] = {}
_EXPERIMENTS: dict[str, Experiment] = {}
_DISCOVERED = False


def register_impl(interface: str, name: str, *, needs: Needs = Needs(), summary: str = "",
                  reimplements: str = "", real_package: str = ""):
    """Class or factory decorator: ``@register_impl("probes", "p2p", needs=...)``. A re-implementation
    of another system's policy names it (``reimplements="Quiver"``) and says why that system's own
    package does not run here (``real_package``); `harness list` and report captions show both."""

    def deco(factory):
        key = (interface, name)
        if key in _IMPLS and _IMPLS[key].factory is not factory:
            raise RuntimeError(f"implementation {interface}.{name} registered twice")
        doc = summary or (factory.__doc__ or "").strip().splitlines()[0:1]
        _IMPLS[key] = ImplSpec(interface, name, factory, needs,
                               doc if isinstance(doc, str) else (doc[0] if doc else ""), reimplements, real_package)
        return factory

    return deco


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
    _DISCOVERED = True


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
