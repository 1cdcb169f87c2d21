"""The phase scripts' pick among a workload's fastest tuned configs (benchmarks/phases.py): the worse of
the warm and cold ratios to the vendor decides, and a missing timing never wins."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from phases import TUNED_KEPT, phase_parser, worse_ratio  # noqa: E402

VENDOR = {"warm_us": [10.0, 10.2, 9.8], "cold_us": [14.0, 14.4, 13.6]}


def test_the_worse_of_warm_and_cold_is_the_ratio():
    fast_warm = {"warm_us": [8.0, 8.1, 7.9], "cold_us": [15.0, 15.2, 14.8]}  # 1.25 warm, 0.93 cold
    even = {"warm_us": [9.5, 9.6, 9.4], "cold_us": [13.0, 13.1, 12.9]}  # 1.05 warm, 1.08 cold
    assert worse_ratio(fast_warm, VENDOR) == 14.0 / 15.0
    assert worse_ratio(even, VENDOR) == 10.0 / 9.5
    assert max([fast_warm, even], key=lambda ours: worse_ratio(ours, VENDOR)) is even


def test_a_config_or_vendor_without_timings_scores_nothing():
    assert worse_ratio({"warm_us": [], "cold_us": [], "error": "launch failed"}, VENDOR) == 0.0
    assert worse_ratio({"warm_us": [9.0], "cold_us": [12.0]}, {"error": "no cuBLAS"}) == 0.0


def test_top_is_one_unless_asked_and_at_most_what_the_tune_keeps():
    parser = phase_parser("doc", "name")
    assert parser.parse_args(["confirm"]).top == 1
    assert parser.parse_args(["confirm", "--top", str(TUNED_KEPT)]).top == TUNED_KEPT
