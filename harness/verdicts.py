"""The verdict rule: whether a measured effect reproduces a paper's claim (docs/metrics.md, Verdicts).

Every report judges its paper's claims here and nowhere else. A claim is an effect the paper
states (a speedup, a share, an ordering) with the tolerance its magnitude is held to; our
measurement of it is an :class:`Estimate`, a value with a confidence interval from repeats or runs.
:func:`judge` gives each claim one of:

- ``reproduced``: the effect has the paper's sign, lies within the tolerance and its interval
  excludes "no effect";
- ``partly``: the paper's sign, outside the interval's noise, but outside the tolerance;
- ``not reproduced``: the opposite sign, outside the noise;
- ``inconclusive (within noise)``: the interval includes "no effect";
- ``no verdict``: a smoke (``--quick``) or reduced-fidelity run, too few points, or nothing measured.

A claim without a "no effect" (a share within a range, a count equal to the paper's): reproduced
when the whole interval lies within the tolerance, not reproduced when it lies wholly outside,
inconclusive otherwise. :func:`overall` turns an artifact's judgements into its status, and
:class:`Verdict` gives the caption's sentence on the rule and the notes of each claim.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace
from typing import Iterable, Sequence

LEVEL = 0.95                       # every interval is two-sided at this confidence
BOOTSTRAP_RESAMPLES = 2000

REPRODUCED = "reproduced"
PARTLY = "partly"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive (within noise)"
NO_VERDICT = "no verdict"
MEASURED = "measured"              # an artifact with no claim to judge (our own table)
NOT_MEASURED = "not measured"      # an artifact none of whose points was measured (harness.reportkit.unmeasured)
VERDICTS = (REPRODUCED, PARTLY, NOT_REPRODUCED, INCONCLUSIVE)

SMOKE = "smoke run (--quick)"
TOLERANCE = 1.5                    # a ratio the paper prints holds within this factor of it either way, unless
                                   # the artifact states another tolerance
MAX_NOTED = 12                     # claims noted one by one; past it the reproduced ones share a line
REDUCED = "reduced fidelity (time budget)"


# ----------------------------------------------------------------------------- estimates

@dataclass(frozen=True)
class Estimate:
    """A measured effect: its value and the ends of its confidence interval, and how they were
    found (``how``: "t over 3 repeats", "exact: modelled", ...). ``n``: the samples behind it (0 for
    an exact number)."""

    value: float
    lo: float
    hi: float
    how: str
    n: int = 0
    spread: str = ""        # the interval is this spread of the samples (e.g. p10-p90), not a confidence interval

    @classmethod
    def exact(cls, value: float, how: str = "exact") -> "Estimate":
        """A number without noise: a count, bytes allocated, a model's output."""
        return cls(float(value), float(value), float(value), how, 0)

    @classmethod
    def from_samples(cls, samples: Sequence[float], what: str = "repeats", method: str = "t",
                     level: float = LEVEL, seed: int = 0) -> "Estimate":
        """The mean with Student's t interval (``method="t"``), or the median with a percentile
        bootstrap interval (``"bootstrap"``, a fixed seed so that reports regenerate alike). Fewer
        than two samples: an unbounded interval."""
        values = [float(x) for x in samples]
        if not values:
            raise ValueError("no samples")
        n = len(values)
        if method == "t":
            mean = statistics.fmean(values)
            if n < 2:
                return cls(mean, -math.inf, math.inf, f"t over {n} {what}", n)
            half = t_quantile(level, n - 1) * statistics.stdev(values) / math.sqrt(n)
            return cls(mean, mean - half, mean + half, f"t over {n} {what}", n)
        if method == "bootstrap":
            import numpy as np

            median = statistics.median(values)
            if n < 2:
                return cls(median, -math.inf, math.inf, f"bootstrap over {n} {what}", n)
            rng = np.random.default_rng(seed)
            picks = rng.integers(0, n, size=(BOOTSTRAP_RESAMPLES, n))
            medians = np.median(np.asarray(values)[picks], axis=1)
            tail = (1 - level) / 2
            lo, hi = np.quantile(medians, [tail, 1 - tail])
            return cls(median, float(lo), float(hi), f"bootstrap of the median over {n} {what}", n)
        raise ValueError(f"unknown interval method {method!r} (t, bootstrap)")

    @classmethod
    def from_stats(cls, stats: dict | None, what: str = "repeats", level: float = LEVEL) -> "Estimate | None":
        """The mean of a result row's repeats with Student's t interval, from the row's ``stats``
        (``repeats``, ``mean`` and ``std``, the population deviation harness.timing stores); None
        without them."""
        if not isinstance(stats, dict) or not all(k in stats for k in ("repeats", "mean", "std")):
            return None
        n, mean, std = int(stats["repeats"]), float(stats["mean"]), float(stats["std"])
        if n < 2:
            return cls(mean, -math.inf, math.inf, f"t over {n} {what}", n)
        sample_sd = std * math.sqrt(n / (n - 1))
        half = t_quantile(level, n - 1) * sample_sd / math.sqrt(n)
        return cls(mean, mean - half, mean + half, f"t over {n} {what}", n)

    @classmethod
    def with_noise(cls, value: float, noise: "Noise") -> "Estimate":
        """One measurement of a positive quantity with the interval ``noise`` gives a single
        measurement of its kind: [value / factor, value * factor]."""
        return cls(float(value), value / noise.factor, value * noise.factor, noise.how, 1)

    def ratio(self, other: "Estimate") -> "Estimate":
        """self / other of two independent positive estimates: the intervals' relative half-widths
        (in log space) added in quadrature."""
        if not (self.value > 0 and other.value > 0):
            raise ValueError("a ratio of estimates needs positive values")
        value = self.value / other.value
        half = math.hypot(self._log_half(), other._log_half())
        how = self.how if self.how == other.how else f"{self.how} / {other.how}"
        if math.isinf(half):
            return Estimate(value, 0.0, math.inf, how, min(self.n, other.n))
        return Estimate(value, value * math.exp(-half), value * math.exp(half), how, min(self.n, other.n))

    def times(self, factor: float) -> "Estimate":
        """The estimate in another unit (``factor`` > 0): per batch, per epoch, in percent."""
        if factor <= 0:
            raise ValueError("scale factor must be positive")
        return Estimate(self.value * factor, self.lo * factor, self.hi * factor, self.how, self.n)

    def plus(self, other: "Estimate") -> "Estimate":
        """self + other of two independent estimates: the half-widths added in quadrature."""
        value = self.value + other.value
        half = math.hypot(max(self.hi - self.value, self.value - self.lo),
                          max(other.hi - other.value, other.value - other.lo))
        how = self.how if self.how == other.how else f"{self.how} + {other.how}"
        return Estimate(value, value - half, value + half, how, min(self.n, other.n))

    def minus(self, other: "Estimate") -> "Estimate":
        """self - other of two independent estimates: the half-widths added in quadrature."""
        return self.plus(Estimate(-other.value, -other.hi, -other.lo, other.how, other.n))

    def widened(self, factor: float, why: str) -> "Estimate":
        """The interval of a positive effect with a multiplicative noise ``factor`` (>= 1) measured
        apart added in quadrature (in log space), e.g. the launch-to-launch spread of the same work:
        what a comparison of two launches must exceed to be told from noise."""
        if factor < 1:
            raise ValueError("a noise factor is at least 1")
        if factor == 1:
            return self
        half = math.hypot(self._log_half(), math.log(factor))
        lo, hi = (0.0, math.inf) if math.isinf(half) else (self.value * math.exp(-half), self.value * math.exp(half))
        return Estimate(self.value, lo, hi, f"{self.how} and {why} in quadrature", self.n)

    def _log_half(self) -> float:
        if self.lo == self.hi == self.value:
            return 0.0
        if not self.lo > 0 or math.isinf(self.hi):
            return math.inf
        return max(math.log(self.hi / self.value), math.log(self.value / self.lo))

    @property
    def is_exact(self) -> bool:
        return self.lo == self.hi == self.value

    def text(self, fmt: str = ".3g", unit: str = "") -> str:
        """'1.07x (95% CI 1.05-1.09)', or the value alone for an exact number."""
        if self.is_exact:
            return f"{self.value:{fmt}}{unit}"
        ends = "unbounded" if math.isinf(self.hi) or math.isinf(self.lo) else f"{self.lo:{fmt}}-{self.hi:{fmt}}"
        return f"{self.value:{fmt}}{unit} ({self.spread or f'{LEVEL:.0%} CI'} {ends})"


@dataclass(frozen=True)
class Noise:
    """How far one measurement of a kind may fall from another of the same thing: the factor of a
    single measurement's interval, from the log-spread of measurements repeated over runs."""

    factor: float
    how: str

    @classmethod
    def pooled(cls, groups: Iterable[Sequence[float]], what: str, level: float = LEVEL) -> "Noise | None":
        """From groups of measurements of one thing each (a cell measured in several runs): the
        standard deviation of their logs pooled over the groups of two or more, times Student's t at
        the pooled degrees of freedom; None without such a group."""
        squares, df, cells = 0.0, 0, 0
        for group in groups:
            logs = [math.log(x) for x in group if x > 0]
            if len(logs) < 2:
                continue
            mean = statistics.fmean(logs)
            squares += sum((x - mean) ** 2 for x in logs)
            df += len(logs) - 1
            cells += 1
        if df == 0:
            return None
        factor = math.exp(t_quantile(level, df) * math.sqrt(squares / df))
        return cls(factor, f"one measurement, the spread over runs of {what} ({cells} cell{'s' if cells > 1 else ''} "
                           f"measured more than once, {df} degrees of freedom: x/{factor:.2f})")


def t_quantile(level: float, df: int) -> float:
    """The two-sided Student's t critical value at ``level`` with ``df`` degrees of freedom."""
    from scipy.stats import t

    return float(t.ppf((1 + level) / 2, df))


# ----------------------------------------------------------------------------- tolerances

@dataclass(frozen=True)
class Band:
    """The tolerance of a claim: the effects that count as the paper's magnitude, [lo, hi], and the
    words the caption states it in."""

    lo: float
    hi: float
    text: str
    paper: float | None = None        # the paper's value the band is centred on, where it is

    @classmethod
    def factor(cls, paper: float, factor: float, unit: str = "x") -> "Band":
        """Within ``factor`` of the paper's value either way: [paper / factor, paper * factor]."""
        return cls(paper / factor, paper * factor, f"within {factor:g}x of the paper's {paper:.3g}{unit}", paper)

    @classmethod
    def around(cls, paper: float, tolerance: float, unit: str = "") -> "Band":
        """Within ``tolerance`` of the paper's value either way (an absolute tolerance: for ratios
        near 1 and shares, where a factor would reach across no effect)."""
        return cls(paper - tolerance, paper + tolerance,
                   f"within {tolerance:g}{unit} of the paper's {paper:.3g}{unit}", paper)

    @classmethod
    def between(cls, lo: float, hi: float, text: str = "") -> "Band":
        return cls(lo, hi, text or f"between {lo:g} and {hi:g}")

    @classmethod
    def beyond(cls, null: float = 1.0, direction: int = 1, text: str = "") -> "Band":
        """Any effect on the paper's side of ``null``: the paper states a direction, no magnitude."""
        lo, hi = (null, math.inf) if direction > 0 else (-math.inf, null)
        return cls(lo, hi, text or "any magnitude (the paper prints none)")

    def __contains__(self, value: float) -> bool:
        return self.lo <= value <= self.hi


# ----------------------------------------------------------------------------- claims

@dataclass(frozen=True)
class Claim:
    """One effect the paper states and our measurement of it.

    ``effect``: the estimate (None: not measured); ``band``: its tolerance; ``paper``: the paper's
    number as printed; ``null``: the effect of "no effect" (1.0 for a ratio; None where the claim
    is a bound, a share or a count: nothing to exclude); ``direction``: the side of ``null`` the
    paper's effect lies on (0: the band's side, or that of the paper's value it is centred on);
    ``runs``: the run ids the effect was measured in (a smoke or reduced-fidelity one gets no
    verdict); ``points`` and ``needs``: how many points the claim rests on and how many it takes to
    judge (a line of 2 epochs, a trace of 5 samples); ``ours``: how our measurement reads where the
    effect is a flag (1: it holds, 0: not); ``withheld``: why the measurement cannot stand for the
    paper's (an epoch capped below whole loader waves, ...): no verdict."""

    what: str
    effect: Estimate | None
    band: Band
    paper: str = ""
    null: float | None = 1.0
    direction: int = 0
    runs: tuple[str, ...] = ()
    points: int | None = None
    needs: int = 0
    unit: str = "x"
    ours: str = ""                 # how our measurement reads where the effect is a flag (1 held, 0 not)
    withheld: str = ""             # why the measurement cannot stand for the paper's (a capped epoch, ...)

    @property
    def sign(self) -> int:
        if self.direction:
            return 1 if self.direction > 0 else -1
        if self.null is None:
            return 0
        if self.band.lo >= self.null:
            return 1
        if self.band.hi <= self.null:
            return -1
        if self.band.paper is not None and self.band.paper != self.null:
            return 1 if self.band.paper > self.null else -1
        raise ValueError(f"{self.what}: a band around no effect needs the paper's direction or null=None")


@dataclass(frozen=True)
class Judgement:
    claim: Claim
    verdict: str
    why: str

    def line(self) -> str:
        """The note of one claim: what, ours beside the paper's, the verdict and why."""
        c = self.claim
        ours = c.ours or (c.effect.text(unit=c.unit) if c.effect is not None else "not measured")
        paper = f" (paper {c.paper})" if c.paper else ""
        return f"{c.what}: {ours}{paper}: {self.verdict} ({self.why})"


def judge(claim: Claim, unjudgeable: dict[str, str] | None = None) -> Judgement:
    """The rule (module doc) for one claim; ``unjudgeable``: run id -> why a run gets no verdict."""
    e = claim.effect
    blocked = sorted({why for run, why in (unjudgeable or {}).items() if run in claim.runs})
    if blocked:
        return Judgement(claim, NO_VERDICT, ", ".join(blocked))
    if claim.withheld:
        return Judgement(claim, NO_VERDICT, claim.withheld)
    if claim.points is not None and claim.points < claim.needs:
        return Judgement(claim, NO_VERDICT, f"too few to judge: {claim.points} points, {claim.needs} needed")
    if e is None or not math.isfinite(e.value):
        return Judgement(claim, NO_VERDICT, "not measured")
    if not e.is_exact and (math.isinf(e.lo) or math.isinf(e.hi)):
        return Judgement(claim, INCONCLUSIVE, f"no interval: {e.how}")
    if claim.null is None:
        if e.lo in claim.band and e.hi in claim.band:
            return Judgement(claim, REPRODUCED, f"{claim.band.text}")
        if e.hi < claim.band.lo or e.lo > claim.band.hi:
            return Judgement(claim, NOT_REPRODUCED, f"outside {claim.band.text}")
        return Judgement(claim, INCONCLUSIVE, f"the interval straddles the edge of {claim.band.text}")
    if e.lo <= claim.null <= e.hi:
        return Judgement(claim, INCONCLUSIVE, f"the interval includes no effect ({claim.null:g}{claim.unit})")
    if (1 if e.value > claim.null else -1) != claim.sign:
        return Judgement(claim, NOT_REPRODUCED, "the opposite sign to the paper's")
    if e.value in claim.band:
        return Judgement(claim, REPRODUCED, f"the paper's sign, {claim.band.text}")
    return Judgement(claim, PARTLY, f"the paper's sign, but not {claim.band.text}")


def overall(judgements: Iterable[Judgement]) -> str:
    """An artifact's status from its claims' verdicts: reproduced when every judged claim is;
    partly when some are reproduced or partly; not reproduced when none is and some go the wrong
    way; inconclusive when every judged claim is; no verdict (and why) when no claim could be
    judged; measured when there is no claim."""
    judgements = list(judgements)
    if not judgements:
        return MEASURED
    judged = [j.verdict for j in judgements if j.verdict != NO_VERDICT]
    if not judged:
        reasons = sorted({j.why for j in judgements})
        return f"{NO_VERDICT} ({reasons[0] if len(reasons) == 1 else 'see the notes'})"
    if all(v == REPRODUCED for v in judged):
        return REPRODUCED
    if any(v in (REPRODUCED, PARTLY) for v in judged):
        return PARTLY
    if any(v == NOT_REPRODUCED for v in judged):
        return NOT_REPRODUCED
    return INCONCLUSIVE


RULE = ("Verdict (docs/metrics.md, Verdicts): a claim is reproduced when the measured effect has the paper's sign, "
        f"lies within the tolerance and its {LEVEL:.0%} confidence interval excludes no effect; partly when only the "
        "tolerance fails; not reproduced when the sign is the opposite; inconclusive when the interval includes no "
        "effect; smoke and reduced-fidelity runs get none.")


@dataclass
class Verdict:
    """An artifact's judged claims: its status, the caption's sentence and a note per claim."""

    judgements: list[Judgement] = field(default_factory=list)

    @property
    def status(self) -> str:
        return overall(self.judgements)

    def caption(self) -> str:
        """The rule, then each distinct tolerance and interval method of the claims."""
        if not self.judgements:
            return ""
        bands = list(dict.fromkeys(j.claim.band.text for j in self.judgements))
        hows = list(dict.fromkeys(j.claim.effect.how for j in self.judgements if j.claim.effect is not None))
        return (f"{RULE} Tolerance: {'; '.join(bands)}."
                + (f" Intervals: {'; '.join(hows)}." if hows else ""))

    def tally(self) -> str:
        """'2 of 5 claims reproduced, 1 partly, 2 not reproduced'."""
        counts: dict[str, int] = {}
        for j in self.judgements:
            counts[j.verdict] = counts.get(j.verdict, 0) + 1
        n = len(self.judgements)
        if not n:
            return ""
        order = [v for v in (*VERDICTS, NO_VERDICT) if v in counts]
        first, *rest = order
        return (f"{counts[first]} of {n} claim{'s' if n > 1 else ''} {first}"
                + "".join(f", {counts[v]} {v}" for v in rest))

    def notes(self) -> list[str]:
        """A note per claim; past MAX_NOTED claims the reproduced ones are counted in one line."""
        if len(self.judgements) <= MAX_NOTED:
            return [f"Claim: {j.line()}" for j in self.judgements]
        held = [j for j in self.judgements if j.verdict == REPRODUCED]
        return ([f"Claim: {j.line()}" for j in self.judgements if j.verdict != REPRODUCED]
                + ([f"Claims reproduced ({len(held)}): " + "; ".join(j.claim.what for j in held)] if held else []))


def verdict_of(claims: Iterable[Claim], unjudgeable: dict[str, str] | None = None) -> Verdict:
    return Verdict([judge(c, unjudgeable) for c in claims])


def with_runs(claim: Claim, runs: Iterable[str]) -> Claim:
    return replace(claim, runs=tuple(sorted(set(runs))))
