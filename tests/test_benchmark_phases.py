"""The phase scripts' pick among a workload's fastest tuned configs (benchmarks/phases.py): the worse of
the warm and cold ratios to the vendor decides, a missing timing never wins where another has one, and
the second confirmation re-times the first one's pick only while the tune still lists it."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from phases import (COLD_SCREEN_TIMINGS, TUNED_KEPT, ColdScreen, confirmed_indexes, phase_parser, pick_index,  # noqa: E402
                    worse_ratio)

VENDOR = {"warm_us": [10.0, 10.2, 9.8], "cold_us": [14.0, 14.4, 13.6]}
FAST_WARM = {"warm_us": [8.0, 8.1, 7.9], "cold_us": [15.0, 15.2, 14.8]}  # 1.25 warm, 0.93 cold
EVEN = {"warm_us": [9.5, 9.6, 9.4], "cold_us": [13.0, 13.1, 12.9]}  # 1.05 warm, 1.08 cold
FAILED = {"warm_us": [], "cold_us": [], "error": "launch failed"}


def test_the_worse_of_warm_and_cold_is_the_ratio_and_picks():
    assert worse_ratio(FAST_WARM, VENDOR) == 14.0 / 15.0
    assert worse_ratio(EVEN, VENDOR) == 10.0 / 9.5
    assert pick_index({3: FAST_WARM, 7: EVEN, 9: FAILED}, VENDOR) == 7


def test_without_vendor_timings_the_fastest_warm_with_timings_is_picked_not_the_first():
    assert worse_ratio(EVEN, {"error": "no cuBLAS"}) == 0.0
    assert pick_index({9: FAILED, 7: EVEN, 3: FAST_WARM}, {"error": "no cuBLAS"}) == 3
    assert pick_index({9: FAILED, 7: EVEN}, VENDOR) == 7


def test_the_second_confirmation_times_the_pick_while_the_tune_lists_it():
    found = {"top": [{"index": i} for i in (11, 12, 13, 14)]}
    assert confirmed_indexes("w", found, {}, 3) == [11, 12, 13]
    assert confirmed_indexes("w", found, {"w": 13}, 1) == [13]
    assert confirmed_indexes("w", found, {"w": 99}, 1) == [11]  # a pick of another tune
    assert confirmed_indexes("w", found, {"other": 13}, 1) == [11]  # the first confirmation stopped before it
    assert confirmed_indexes("w", found, {"w": 13}, 3) == [11, 12, 13]  # --top asks for a new pick


def test_a_cold_screen_adds_the_fastest_cold_to_the_candidates_and_keeps_their_pick():
    found = {"top": [{"index": i} for i in (11, 12, 13, 14)], "cold": [{"index": i} for i in (40, 12, 41)]}
    assert confirmed_indexes("w", found, {}, 3) == [11, 12, 13, 40, 41]  # 12 is among both
    assert confirmed_indexes("w", found, {}, 1) == [11, 40]
    assert confirmed_indexes("w", found, {"w": 41}, 1) == [41]  # the second confirmation: a pick screened cold
    assert phase_parser("doc", "name").parse_args(["tune", "--cold-screen", "12"]).cold_screen == 12
    assert phase_parser("doc", "name").parse_args(["tune"]).cold_screen == 0


def test_the_cold_screen_times_each_config_cold_and_lists_the_fastest_first():
    """Through engine.confirm's ReplayStopwatch (a recording's measurements, each config's in turn): a
    config the recording lacks is left out, and a config's timings are its recorded ones."""
    import dataclasses

    from engine import create_task
    from engine.confirm import ReplayStopwatch
    from engine.logfile import make_target
    from engine.synthetic import MODEL, synthetic_recording
    from engine.workloads import PRESETS

    task = create_task(PRESETS["C12"].task_name, PRESETS["C12"].args)
    measured = [r for r in synthetic_recording(task, 6, seed=2) if r.ok]
    records = [dataclasses.replace(r, costs=(r.costs[0] * (1 + 0.01 * k),))
               for r in measured for k in range(COLD_SCREEN_TIMINGS)]
    recorded = {r.config_index: r.costs[0] for r in measured}
    rows = [{"index": i, "config": task.config_space.get(i).values()} for i in recorded] + [
        {"index": 7, "config": {}}]  # not in the recording
    assert 7 not in recorded
    with ColdScreen(lambda: ReplayStopwatch(records, make_target(MODEL))) as screen:
        screened = screen.fastest_cold(task, rows)
    assert [r["index"] for r in screened] == sorted(recorded, key=recorded.get)
    assert all(len(r["cold_us"]) == COLD_SCREEN_TIMINGS and min(r["cold_us"]) == pytest.approx(recorded[r["index"]] * 1e6)
               for r in screened)


def test_top_is_one_unless_asked_and_at_most_what_the_tune_keeps():
    parser = phase_parser("doc", "name")
    assert parser.parse_args(["confirm"]).top == 1
    assert parser.parse_args(["confirm", "--top", str(TUNED_KEPT)]).top == TUNED_KEPT
    with pytest.raises(SystemExit):
        parser.parse_args(["confirm", "--top", str(TUNED_KEPT + 1)])
