"""The value parsers: one clear error for the CLI's options and for experiments' --param alike."""

from __future__ import annotations

import argparse

import pytest

from harness import argtypes as A
from harness.config import RunConfig
from harness.errors import HarnessError
from harness.experiment import Experiment, Param, RunContext


@pytest.mark.parametrize("parse, text, value", [
    (A.positive_int, "3", 3), (A.nonneg_int, "0", 0), (A.positive_float, "0.5", 0.5),
    (A.unit_float, "0", 0.0), (A.scale, "1024", 1024.0), (A.cap_int, "none", 0), (A.cap_int, "7", 7),
    (A.bool_flag, "on", True), (A.bool_flag, "0", False), (A.int_list, "1, 2,", (1, 2)),
    (A.float_list, "0.5,4", (0.5, 4.0)), (A.str_list, "a,b", ("a", "b")), (A.fanouts, "30-30-30", (30, 30, 30)),
    (A.fanout_sets, "30-30-30,15-10-5", ((30, 30, 30), (15, 10, 5))),
    (A.choice("a", "b"), "b", "b"), (A.names_of("kinds", "x", "y"), "y,x", ("y", "x")),
    (A.or_word("auto", A.positive_int), "auto", "auto"), (A.or_word("auto", A.positive_int), "4", 4),
])
def test_parsers_take_good_values(parse, text, value):
    assert parse(text) == value


@pytest.mark.parametrize("parse, text, message", [
    (A.positive_int, "0", "positive integer"), (A.positive_int, "x", "positive integer, got 'x'"),
    (A.nonneg_int, "-1", ">= 0"), (A.positive_float, "-2", "positive number"), (A.unit_float, "1", r"\[0, 1\)"),
    (A.scale, "0", r"\(0, 1024\]"), (A.bool_flag, "maybe", "true or false"), (A.int_list, "1,a", "integers"),
    (A.int_list, ",", "at least one"), (A.int_list, "1,0", "positive integers, got 0"),
    (A.float_list, "8,-1", "positive numbers, got -1"), (A.float_list, "nan", "positive numbers"), (A.float_list, "x", "numbers"), (A.str_list, " , ", "list"),
    (A.fanouts, "30,0", "positive integers"), (A.fanout_sets, "", "sets"), (A.choice("a", "b"), "c", "one of a, b"),
    (A.names_of("kinds", "x", "y"), "x,z", "kinds are x, y"), (A.cap_int, "-3", "positive integer"),
])
def test_parsers_refuse_bad_values_with_one_harness_error(parse, text, message):
    with pytest.raises(A.BadValue, match=message) as caught:
        parse(text)
    assert isinstance(caught.value, HarnessError) and caught.value.exit_code == 2


def test_argparse_reports_a_bad_value_with_the_options_name():
    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument("--gpus", type=A.positive_int)
    with pytest.raises(argparse.ArgumentError, match="--gpus: expected a positive integer, got 0"):
        parser.parse_args(["--gpus", "0"])


def test_a_param_parser_that_raises_value_error_is_one_clear_error():
    class Exp(Experiment):
        id = "zzparse.fig1"
        parameters = {"ratio": Param(0.5, float, "a bare float"), "n": Param(1, A.positive_int, "count")}

    exp = Exp()
    with pytest.raises(A.BadValue, match=r"--param ratio=half: could not convert"):
        exp.validate_params(RunConfig(params={"ratio": "half"}))
    with pytest.raises(A.BadValue, match="positive integer, got 0"):
        exp.param(RunConfig(params={"n": "0"}), "n")
    assert exp.param(RunConfig(params={"ratio": "0.25"}), "ratio") == 0.25


def test_the_run_cache_builds_once_and_drops_what_a_new_entry_replaces():
    closed = []

    class Thing:
        def __init__(self, name):
            self.name = name

        def close(self):
            closed.append(self.name)

    ctx = RunContext(RunConfig())
    built = []

    def build(name):
        built.append(name)
        return Thing(name)

    g1 = ctx.cached(("graph", 1), lambda: build("g1"), replaces=("graph", "impl"))
    assert ctx.cached(("graph", 1), lambda: build("again")) is g1 and built == ["g1"]
    ctx.cached(("impl", 1), lambda: build("i1"))
    ctx.cached(("other", 1), lambda: build("o1"))
    ctx.cached(("graph", 2), lambda: build("g2"), replaces=("graph", "impl"))
    assert sorted(closed) == ["g1", "i1"]
    assert sorted(k[0] for k in ctx.cache) == ["graph", "other"]
