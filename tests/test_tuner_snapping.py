"""Snapped draws (Kernel Tuner's snapping of uniform draws to the nearest valid config) and the
XGBoost tuner's first batch that takes them: on the real H200 C12 recording (2,616 configs of a
restricted view, 15 % of draws invalid), its full space (844,800 configs), and the hub's
dedispersion space of the A4000, where the snapped draws land on the thread limit's edge."""
from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

import engine
from engine import kernel_tuner
from engine.replay import restrict_to_recording
from engine.tuners import get_tuner, snapping
from engine.tuners.snapping import SnappedDraws

from hub_data import cache_path
from synthetic_fixtures import c12_task

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import tuner_spaces  # noqa: E402


@lru_cache(maxsize=None)
def recorded():
    """The real H200 C12 recording as a benchmark space (its task restricted to the 2,616 configs)."""
    return tuner_spaces.c12_space()


def recorded_c12():
    return recorded().task.config_space


def positions_by_hand(space, config):
    return [space.used_options(p).index(d) for p, d in enumerate(config.digits)]


def brute_force_distances(space, positions, exclude=()):
    """{index: option distance to `positions`} of every valid config of `space` not in `exclude`."""
    return {i: sum(abs(a - b) for a, b in zip(positions_by_hand(space, space.get(i)), positions))
            for i in space.iter_indexes() if space.is_valid(space.get(i)) and i not in exclude}


def invalid_draws(space, count, seed=0):
    """`count` draws of option positions that are no valid config of `space`."""
    rng, sizes, found = np.random.default_rng(seed), [len(space.used_options(p)) for p in range(len(space.knobs))], []
    while len(found) < count:
        positions = [int(rng.integers(s)) for s in sizes]
        digits = [space.used_options(p)[o] for p, o in enumerate(positions)]
        if not space.is_valid(space.get(space.index_from_digits(digits))):
            found.append(positions)
    return found


def test_snapped_draws_are_distinct_valid_configs_outside_what_is_excluded():
    space = recorded_c12()
    excluded = {c.index for c in space.sample(np.random.default_rng(0), 500)}
    drawn = SnappedDraws(space).draw(np.random.default_rng(1), 300, exclude=excluded)
    assert len(drawn) == 300 == len({c.index for c in drawn})
    assert all(space.is_valid(c) and c.index not in excluded for c in drawn)


def test_a_valid_draw_is_kept_unchanged():
    space = recorded_c12()
    snapped = SnappedDraws(space)
    for config in space.sample(np.random.default_rng(2), 200):
        assert snapped.snap(positions_by_hand(space, config), np.random.default_rng(0)) == config


def test_an_invalid_draw_lands_on_a_valid_config_at_the_least_option_distance():
    space = recorded_c12()
    snapped = SnappedDraws(space)
    for positions in invalid_draws(space, 25):
        distances = brute_force_distances(space, positions)
        nearest = min(distances.values())
        assert nearest > 0
        ties = {i for i, d in distances.items() if d == nearest}
        landed = {snapped.snap(positions, np.random.default_rng(seed)).index for seed in range(30)}
        assert landed <= ties
        if len(ties) > 1:  # ties are broken at random, not by the lowest index
            assert len(landed) > 1, (positions, ties)


def test_an_excluded_valid_draw_lands_on_its_nearest_config_not_excluded():
    space = recorded_c12()
    config = space.sample(np.random.default_rng(3), 1)[0]
    positions = positions_by_hand(space, config)
    distances = brute_force_distances(space, positions, exclude={config.index})
    landed = SnappedDraws(space).snap(positions, np.random.default_rng(0), exclude={config.index})
    assert distances[landed.index] == min(distances.values()) >= 1


def test_the_search_outwards_of_a_large_space_finds_the_same_least_distance(monkeypatch):
    space = recorded_c12()
    monkeypatch.setattr(snapping, "ENUMERATE_LIMIT", 0)  # the path of a space too large to enumerate
    snapped = SnappedDraws(space)
    for positions in invalid_draws(space, 10, seed=4):
        distances = brute_force_distances(space, positions)
        landed = snapped.snap(positions, np.random.default_rng(0))
        assert distances[landed.index] == min(distances.values())


def test_the_full_c12_space_is_snapped_without_enumerating_it():
    space = c12_task().config_space
    assert len(space) > 800_000
    snapped = SnappedDraws(space)
    drawn = snapped.draw(np.random.default_rng(5), 40)
    assert len({c.index for c in drawn}) == 40 and all(space.is_valid(c) for c in drawn)
    for config in drawn[:10]:  # a valid config is its own nearest
        assert snapped.snap(list(config.digits), np.random.default_rng(0)) == config


def test_the_same_seed_gives_the_same_draws_and_another_seed_others():
    space = recorded_c12()

    def draws(seed):
        return [c.index for c in SnappedDraws(space).draw(np.random.default_rng(seed), 50)]

    assert draws(7) == draws(7)
    assert draws(7) != draws(8)


def dedisp_a4000():
    """(the A4000's dedispersion task restricted to its hub recording, its records)."""
    found = kernel_tuner.parse_cache(kernel_tuner.read_text(cache_path("dedispersion_milo", "A4000")), device="a4000")
    first = found.records[0]
    return restrict_to_recording(engine.create_task(first.task_name, first.args), found.records), found.records


def test_on_dedisp_a4000_snapped_draws_are_within_95_percent_more_often_than_its_configs():
    task, records = dedisp_a4000()
    space = task.config_space
    target = min(r.mean_cost for r in records if r.ok) / 0.95
    fast = {space.index_of(r.entity) for r in records if r.ok and r.mean_cost <= target}
    assert 0.13 < len(fast) / len(space) < 0.15
    drawn = SnappedDraws(space).draw(np.random.default_rng(0), 1000)
    # each draw alone (a batch's distinctness aside): 24.0 % of 20,000 (engine/tuners/snapping.py)
    share = np.mean([c.index in fast for c in drawn])
    assert share > 0.19, share


# -- the XGBoost tuner's first batch ----------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_xgbs_first_batch_is_one_uniform_config_then_the_snapped_draws(seed):
    task = recorded().task
    tuner = get_tuner("xgb", task, seed=seed)
    replay = np.random.default_rng()
    replay.bit_generator.state = tuner.rng.bit_generator.state
    batch = tuner.next_batch(tuner.batch_size(16))
    assert len(batch) == 4
    uniform = task.config_space.sample(replay, 1)
    snapped = SnappedDraws(task.config_space).draw(replay, 3, exclude={uniform[0].index})
    assert batch[:4] == uniform + snapped


def test_xgb_without_snapped_draws_never_asks_for_them(monkeypatch):
    task = recorded().task
    tuner = get_tuner("xgb", task, seed=0, snapped_first=0)
    monkeypatch.setattr(tuner.snapped, "draw", lambda *a, **k: pytest.fail("drew snapped configs"))
    assert len(tuner.next_batch(4)) == 4


def test_only_the_first_batch_takes_snapped_draws(monkeypatch):
    task = recorded().task
    tuner = get_tuner("xgb", task, seed=0)
    calls = []
    draw = tuner.snapped.draw
    monkeypatch.setattr(tuner.snapped, "draw", lambda *a, **k: calls.append(a) or draw(*a, **k))
    measurer = engine.replay.ReplayMeasurer(recorded().records)
    for _ in range(4):
        batch = tuner.next_batch(tuner.batch_size(16))
        tuner.update(batch, measurer.measure(task, batch))
    assert len(calls) == 1


def test_snapped_first_must_not_be_negative():
    with pytest.raises(ValueError, match="snapped_first >= 0"):
        get_tuner("xgb", c12_task(), seed=0, snapped_first=-1)
