"""The one verdict rule (harness/verdicts.py) and the kit that applies it (Report.artifact)."""

from __future__ import annotations

import math
import re
import statistics
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats as scipy_stats

from harness.artifact import RunInfo
from harness.reportkit import Report
from harness.timing import Stats
from harness.verdicts import (INCONCLUSIVE, MEASURED, NO_VERDICT, NOT_REPRODUCED, PARTLY, REPRODUCED, Band, Claim,
                              Estimate, Noise, Verdict, judge, overall, t_quantile)

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- a synthetic artifact

class Exp:
    artifact = "fig1"


def timed_rows(run_id: str, slow: list[float], fast: list[float]) -> pd.DataFrame:
    """Two implementations' time rows of one run, each with the stats harness.timing stores."""
    rows = []
    for impl, samples in (("theirs", slow), ("ours", fast)):
        s = Stats.from_samples(samples)
        rows.append({"experiment": "x.fig1", "impl": impl, "metric": "time", "unit": "s", "value": s.median,
                     "stats": s.to_dict(), "status": "ok", "reason": None, "world_size": 1, "device": "cuda",
                     "params": {}, "run_id": run_id})
    return pd.DataFrame.from_records(rows)


def synthetic_artifact(slow, fast, paper: float = 2.0, quick: bool = False):
    """An artifact claiming, as a paper would, that ours is ``paper``x faster than theirs: its
    status as the kit's rule gives it from the rows' repeats."""
    run_id = "0001_h200_synthetic"
    rows = timed_rows(run_id, slow, fast)
    runs = [RunInfo(run_id, "1xH200", {"config": {"quick": quick}})]
    rep = Report(Exp, rows, runs)
    theirs, ours = (Estimate.from_stats(rows[rows["impl"] == impl]["stats"].iloc[0]) for impl in ("theirs", "ours"))
    claim = Claim("theirs / ours time", theirs.ratio(ours), Band.factor(paper, 1.5), f"{paper}x", runs=(run_id,))
    return rep.artifact("fig", "A synthetic figure.", pd.DataFrame({"a": [1]}), claims=[claim])


def test_an_effect_inside_the_noise_is_inconclusive():
    art = synthetic_artifact([1.0, 1.3, 0.8, 1.2, 0.9], [1.05, 0.85, 1.25, 0.95, 1.1])
    assert art.status == INCONCLUSIVE
    assert "inconclusive" in art.headline and "includes no effect" in art.notes[0]


def test_a_wrong_sign_effect_is_not_reproduced():
    art = synthetic_artifact([1.0, 1.01, 0.99, 1.0], [2.0, 2.02, 1.98, 2.0])      # ours 2x slower, tight
    assert art.status == NOT_REPRODUCED
    assert "opposite sign" in art.notes[0]


def test_the_right_sign_outside_the_tolerance_is_partly():
    art = synthetic_artifact([1.1, 1.11, 1.09, 1.1], [1.0, 1.01, 0.99, 1.0], paper=2.7)   # 1.1x vs 2.7x
    assert art.status == PARTLY
    assert "not within 1.5x of the paper's 2.7x" in art.notes[0]


def test_the_right_sign_within_the_tolerance_beyond_the_noise_is_reproduced():
    art = synthetic_artifact([2.0, 2.02, 1.98, 2.01], [1.0, 1.01, 0.99, 1.0], paper=2.2)
    assert art.status == REPRODUCED
    assert art.headline.startswith("1 of 1 claim reproduced")
    assert "Verdict (docs/metrics.md" in art.caption and "within 1.5x of the paper's 2.2x" in art.caption


def test_a_smoke_run_gets_no_verdict_even_where_its_effect_would_be_reproduced():
    art = synthetic_artifact([2.0, 2.02, 1.98, 2.01], [1.0, 1.01, 0.99, 1.0], paper=2.2, quick=True)
    assert art.status.startswith(NO_VERDICT) and "smoke" in art.status


def test_reduced_fidelity_rows_get_no_verdict():
    run_id = "0002_h200_budget"
    rows = timed_rows(run_id, [2.0, 2.02, 1.98], [1.0, 1.01, 0.99])
    rows["fidelity"] = [{"level": 1, "note": "one repeat"}, None]
    rep = Report(Exp, rows, [RunInfo(run_id, "1xH200", {"config": {}})])
    claim = Claim("c", Estimate.exact(2.0), Band.factor(2.0, 1.5), runs=(run_id,))
    assert rep.artifact("t", "c", pd.DataFrame(), claims=[claim]).status.startswith(NO_VERDICT)
    # the same claim from an unmarked run is judged
    assert Report(Exp, rows.drop(columns="fidelity"), [RunInfo(run_id, "1xH200", {})]).artifact(
        "t", "c", pd.DataFrame(), claims=[claim]).status == REPRODUCED


def test_an_artifact_without_claims_is_measured():
    rep = Report(Exp, timed_rows("0003_x", [1.0], [1.0]), [])
    art = rep.artifact("t", "caption.", pd.DataFrame())
    assert art.status == MEASURED and art.caption == "caption." and art.headline == ""


# ----------------------------------------------------------------------------- intervals

SKEWED = [1.0, 2.0, 3.0, 10.0]      # min 1, median 2.5, mean 4: each statistic its own


def test_the_t_interval_is_about_the_mean_not_the_median_or_the_minimum():
    e = Estimate.from_samples(SKEWED)
    assert statistics.median(SKEWED) == 2.5 and min(SKEWED) == 1.0
    assert e.value == pytest.approx(4.0) and e.n == 4
    half = scipy_stats.t.ppf(0.975, 3) * statistics.stdev(SKEWED) / 2
    assert (e.lo, e.hi) == pytest.approx((4.0 - half, 4.0 + half))
    assert e.hi - e.value == pytest.approx(e.value - e.lo)          # symmetric about the mean


def test_the_interval_from_a_rows_stats_equals_the_one_from_its_samples():
    """Rows store the population deviation (harness.timing.Stats); from_stats must turn it into the
    sample deviation, or every interval would be too narrow."""
    from_rows = Estimate.from_stats(Stats.from_samples(SKEWED).to_dict())
    from_samples = Estimate.from_samples(SKEWED)
    assert (from_rows.value, from_rows.lo, from_rows.hi) == pytest.approx(
        (from_samples.value, from_samples.lo, from_samples.hi))
    narrow = 4.0 + scipy_stats.t.ppf(0.975, 3) * statistics.pstdev(SKEWED) / 2      # the mistake it must not make
    assert from_rows.hi > narrow


def test_the_bootstrap_interval_is_about_the_median_and_reproducible():
    e = Estimate.from_samples(SKEWED * 5, method="bootstrap")
    assert e.value == 2.5 and e.lo <= 2.5 <= e.hi
    assert 1.0 <= e.lo and e.hi <= 10.0
    assert e == Estimate.from_samples(SKEWED * 5, method="bootstrap")      # fixed seed: reports regenerate alike


def test_one_sample_has_no_interval_and_is_inconclusive():
    e = Estimate.from_samples([3.0])
    assert math.isinf(e.lo) and math.isinf(e.hi)
    assert Estimate.from_stats({"repeats": 1, "mean": 3.0, "std": 0.0}).hi == math.inf
    j = judge(Claim("c", e, Band.beyond(1.0)))
    assert j.verdict == INCONCLUSIVE and "no interval" in j.why


def test_ratios_and_sums_add_half_widths_in_quadrature():
    a, b = Estimate(4.0, 2.0, 8.0, "t"), Estimate(2.0, 1.0, 4.0, "t")          # both x/2 either way
    r = a.ratio(b)
    assert r.value == 2.0 and r.hi == pytest.approx(2.0 * math.exp(math.hypot(math.log(2), math.log(2))))
    assert Estimate.exact(6.0).ratio(Estimate.exact(3.0)) == Estimate.exact(2.0, "exact")
    s = Estimate(1.0, 0.7, 1.3, "t").plus(Estimate(2.0, 1.6, 2.4, "t"))
    assert (s.value, s.hi - s.value) == pytest.approx((3.0, 0.5))
    d = Estimate(5.0, 4.0, 6.0, "t").minus(Estimate(2.0, 2.0, 2.0, "t"))
    assert (d.value, d.lo, d.hi) == pytest.approx((3.0, 2.0, 4.0))


def test_launch_noise_widens_an_interval_in_quadrature():
    g = Estimate(1.4, 1.4 / 1.1, 1.4 * 1.1, "t").widened(1.3, "launch noise")
    assert g.hi == pytest.approx(1.4 * math.exp(math.hypot(math.log(1.1), math.log(1.3))))
    assert judge(Claim("c", g, Band.beyond(1.0))).verdict == REPRODUCED
    assert judge(Claim("c", Estimate(1.2, 1.2 / 1.1, 1.32, "t").widened(1.3, "n"), Band.beyond(1.0))).verdict == \
        INCONCLUSIVE


def test_pooled_run_to_run_noise():
    groups = [[1.0, 2.0], [10.0, 10.0, 10.0], [5.0]]         # the last is one run: no spread to pool
    noise = Noise.pooled(groups, "a metric")
    s = math.sqrt(2 * (math.log(2) / 2) ** 2 / 3)             # squares over 1 + 2 degrees of freedom
    assert noise.factor == pytest.approx(math.exp(t_quantile(0.95, 3) * s))
    assert "3 degrees of freedom" in noise.how
    assert Noise.pooled([[1.0], [2.0]], "x") is None
    e = Estimate.with_noise(8.0, noise)
    assert (e.lo, e.hi) == pytest.approx((8.0 / noise.factor, 8.0 * noise.factor))


# ----------------------------------------------------------------------------- the rule, claim by claim

def test_claims_without_no_effect_need_the_whole_interval_inside_the_tolerance():
    band = Band.between(60, 94, "the paper's 60-94%")
    inside = judge(Claim("share", Estimate(80, 78, 82, "t"), band, null=None))
    straddles = judge(Claim("share", Estimate(61, 58, 64, "t"), band, null=None))
    outside = judge(Claim("share", Estimate(54.6, 54.5, 54.7, "t"), band, null=None))
    assert (inside.verdict, straddles.verdict, outside.verdict) == (REPRODUCED, INCONCLUSIVE, NOT_REPRODUCED)


def test_too_few_points_and_withheld_measurements_get_no_verdict():
    good = Estimate(2.0, 1.9, 2.1, "t")
    few = judge(Claim("curve", good, Band.beyond(1.0), points=2, needs=5))
    assert few.verdict == NO_VERDICT and "too few to judge: 2 points, 5 needed" in few.why
    assert judge(Claim("curve", good, Band.beyond(1.0), points=5, needs=5)).verdict == REPRODUCED
    held = judge(Claim("cell", good, Band.beyond(1.0), withheld="an upper bound"))
    assert (held.verdict, held.why) == (NO_VERDICT, "an upper bound")
    assert judge(Claim("cell", None, Band.beyond(1.0))).why == "not measured"


def test_a_band_straddling_no_effect_takes_the_papers_side():
    claim = Claim("overlap gain", Estimate(0.9, 0.88, 0.92, "t"), Band.factor(1.27, 1.5))    # [0.85, 1.9]
    assert claim.sign == 1 and judge(claim).verdict == NOT_REPRODUCED
    with pytest.raises(ValueError, match="direction"):
        _ = Claim("c", Estimate.exact(1.0), Band.between(0.5, 2.0)).sign


@pytest.mark.parametrize("verdicts, status", [
    ([REPRODUCED, REPRODUCED], REPRODUCED),
    ([REPRODUCED, NOT_REPRODUCED], PARTLY),
    ([PARTLY, INCONCLUSIVE], PARTLY),
    ([NOT_REPRODUCED, INCONCLUSIVE], NOT_REPRODUCED),
    ([INCONCLUSIVE, INCONCLUSIVE], INCONCLUSIVE),
    ([REPRODUCED, NO_VERDICT], REPRODUCED),
])
def test_an_artifacts_status_from_its_claims(verdicts, status):
    from harness.verdicts import Judgement

    claim = Claim("c", Estimate.exact(1.0), Band.beyond(1.0))
    assert overall([Judgement(claim, v, "why") for v in verdicts]) == status


def test_the_tally_and_notes_of_many_claims():
    claims = [Claim(f"c{i}", Estimate.exact(2.0), Band.beyond(1.0)) for i in range(13)] + \
        [Claim("wrong", Estimate.exact(0.5), Band.beyond(1.0))]
    v = Verdict([judge(c) for c in claims])
    assert v.status == PARTLY and v.tally() == "13 of 14 claims reproduced, 1 not reproduced"
    notes = v.notes()
    assert len(notes) == 2 and notes[0].startswith("Claim: wrong") and notes[1].startswith("Claims reproduced (13)")


# ----------------------------------------------------------------------------- one rule for every artifact

def test_no_experiment_decides_its_own_verdict():
    """Every status comes from the kit's rule: no report module assigns one or names a verdict."""
    offenders = []
    for path in sorted((ROOT / "experiments").rglob("*.py")):
        text = path.read_text()
        if re.search(r"\bstatus\s*=\s*(\"|'|verdict\(|table5_status)", text) or \
                re.search(r"[\"'](reproduced|partly|not reproduced)[\"']", text):
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_an_artifact_states_no_status_but_not_measured():
    rep = Report(Exp, timed_rows("0004_x", [1.0], [1.0]), [])
    assert rep.artifact("t", "c", pd.DataFrame(), status="not measured").status == "not measured"
    for status in ("reproduced", "partly", "measured"):
        with pytest.raises(ValueError, match="comes from its claims"):
            rep.artifact("t", "c", pd.DataFrame(), status=status)
    with pytest.raises(ValueError, match="comes from its claims"):
        rep.artifact("t", "c", pd.DataFrame(), status="not measured",
                     claims=[Claim("c", Estimate.exact(2.0), Band.beyond(1.0))])
