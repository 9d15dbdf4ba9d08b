"""Value parsers: the harness CLIs' option types and every experiment's ``--param`` types.

Each parser takes the text as typed and returns the value, or raises :class:`BadValue` with one
clear message. ``BadValue`` is a :class:`HarnessError` (``--param`` problems end the run with
``error: ...`` and exit 2) and an ``argparse.ArgumentTypeError`` (argparse prefixes the option's
name), so one parser serves both.
"""

from __future__ import annotations

import argparse
from typing import Callable, Iterable

from .errors import HarnessError


class BadValue(HarnessError, argparse.ArgumentTypeError):
    """A value that does not parse: the message says what was expected."""


def _items(text: str) -> list[str]:
    return [x.strip() for x in str(text).split(",") if x.strip()]


def _number(text: str, kind: type, what: str):
    try:
        return kind(text)
    except ValueError:
        raise BadValue(f"expected {what}, got '{text}'") from None


def positive_int(text: str) -> int:
    value = _number(text, int, "a positive integer")
    if value < 1:
        raise BadValue(f"expected a positive integer, got {value}")
    return value


def nonneg_int(text: str) -> int:
    value = _number(text, int, "an integer >= 0")
    if value < 0:
        raise BadValue(f"expected an integer >= 0, got {value}")
    return value


def positive_float(text: str) -> float:
    value = _number(text, float, "a number")
    if value <= 0:
        raise BadValue(f"expected a positive number, got {value}")
    return value


def unit_float(text: str) -> float:
    """A number in [0, 1) (a dropout, a share)."""
    value = _number(text, float, "a number")
    if not 0 <= value < 1:
        raise BadValue(f"expected a number in [0, 1), got {value}")
    return value


def scale(text: str) -> float:
    """A problem size relative to the paper's (1.0 = the paper's size)."""
    value = _number(text, float, "a number")
    if not 0 < value <= 1024:
        raise BadValue(f"scale must be in (0, 1024], got {value}")
    return value


def cap_int(text: str) -> int:
    """A positive integer cap, or none / all / 0 for no cap (0)."""
    if text.strip().lower() in ("none", "all", "0", ""):
        return 0
    return positive_int(text)


def cap(value):
    """A :func:`cap_int` value as a limit: None (no cap) for 0 and None."""
    return value or None


def bool_flag(text: str) -> bool:
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise BadValue(f"expected true or false, got '{text}'")


def int_list(text: str) -> tuple[int, ...]:
    """Comma-separated positive integers (counts, sizes, hops: every list parameter counts something)."""
    values = tuple(_number(x, int, "comma-separated integers") for x in _items(text))
    if not values:
        raise BadValue("expected at least one integer")
    if min(values) < 1:
        raise BadValue(f"expected positive integers, got {min(values)} in '{text}'")
    return values


def float_list(text: str) -> tuple[float, ...]:
    """Comma-separated positive numbers (sizes)."""
    values = tuple(_number(x, float, "comma-separated numbers") for x in _items(text))
    if not values:
        raise BadValue("expected at least one number")
    if not all(v > 0 and v != float("inf") for v in values):
        bad = next(v for v in values if not (v > 0 and v != float("inf")))
        raise BadValue(f"expected positive numbers, got {bad:g} in '{text}'")
    return values


def str_list(text: str) -> tuple[str, ...]:
    items = tuple(_items(text))
    if not items:
        raise BadValue("expected a comma-separated list")
    return items


def choice(*allowed: str) -> Callable[[str], str]:
    """A parser accepting exactly one of ``allowed``."""
    def parse(text: str) -> str:
        if text not in allowed:
            raise BadValue(f"expected one of {', '.join(allowed)}, not '{text}'")
        return text
    return parse


def names_of(what: str, *allowed: str) -> Callable[[str], tuple[str, ...]]:
    """A parser of a comma-separated, non-empty list drawn from ``allowed`` ('gcn,sage')."""
    def parse(text: str) -> tuple[str, ...]:
        names = tuple(_items(text))
        if not names or any(n not in allowed for n in names):
            raise BadValue(f"{what} are {', '.join(allowed)}, not '{text}'")
        return names
    return parse


def names_from(what: str, allowed: Callable[[], Iterable[str]]) -> Callable[[str], tuple[str, ...]]:
    """A parser of a comma-separated, non-empty list drawn from ``allowed()``, read when a value is
    parsed (the implementations of an interface the registry holds then)."""
    def parse(text: str) -> tuple[str, ...]:
        return names_of(what, *allowed())(text)
    return parse


def or_word(word: str, parse: Callable[[str], object]) -> Callable[[str], object]:
    """``word`` itself (e.g. 'auto') or what ``parse`` makes of the text."""
    def parse_or_word(text: str):
        return word if text.strip() == word else parse(text)
    return parse_or_word


def dataset_names(text: str) -> tuple[str, ...]:
    """'products,PA' -> the dataset registry's names of those datasets (aliases resolved)."""
    from harness import datasets

    names = tuple(_items(text))
    if not names:
        raise BadValue("expected at least one dataset name")
    return tuple(datasets.get(n).name for n in names)


def fanouts(text: str) -> tuple[int, ...]:
    """'30,30,30' (or '30-30-30') -> (30, 30, 30): fanout per hop, seeds first."""
    values = tuple(_number(x, int, "fanouts like 30,30,30") for x in _items(str(text).replace("-", ",")))
    if not values or min(values) < 1:
        raise BadValue(f"fanouts take positive integers like 30,30,30, not '{text}'")
    return values


def fanout_sets(text: str) -> tuple[tuple[int, ...], ...]:
    """'30-30-30,15-10-5' -> ((30, 30, 30), (15, 10, 5))."""
    sets = tuple(fanouts(part) for part in _items(text))
    if not sets:
        raise BadValue(f"fanouts take sets of positive integers like 30-30-30,15-10-5, not '{text}'")
    return sets
