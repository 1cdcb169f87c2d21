"""Extreme configs (every ordered knob at an end) and the share of the XGBoost tuner's batches
they get: on the H200 broadcast recording (160 configs, enumerated), the full G1 GEMM space
(sampled near given configs) and C12 (no ordered knob: the tuner without them)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import engine
from engine.replay import ReplayMeasurer
from engine.tuners import get_tuner
from engine.tuners.extremes import ExtremeConfigs
from engine.workloads import get_preset

from synthetic_fixtures import c12_task

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import tuner_spaces  # noqa: E402


def broadcast():
    """(the broadcast task restricted to its recording, a replay measurer of it)."""
    space = tuner_spaces.broadcast_space()
    return space.task, ReplayMeasurer(space.records)


def by_hand(space):
    """(position, smallest, largest option) of each knob of at least four numbers."""
    ends = []
    for position, knob in enumerate(space.knobs):
        used = space.used_options(position)
        if knob.kind != "ot" or len(used) < 4:
            continue
        values = [knob.value(o).val for o in used]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            ends.append((position, used[int(np.argmin(values))], used[int(np.argmax(values))]))
    return ends


def test_only_knobs_of_four_or_more_numbers_have_ends():
    task, _ = broadcast()
    extremes = ExtremeConfigs(task.config_space)
    assert [(p, *e) for p, e in extremes.ends] == by_hand(task.config_space)
    assert [task.config_space.knobs[p].name for p, _ in extremes.ends] == ["threads", "elems_per_thread", "vector"]
    # the direct convolution's splits are no order, and auto_unroll_max_step's three values are mostly ends
    assert ExtremeConfigs(c12_task().config_space).ends == []


def test_an_enumerable_space_gives_every_unvisited_extreme_config():
    task, _ = broadcast()
    space = task.config_space
    extremes = ExtremeConfigs(space)
    every = {i for i in space.iter_indexes()
             if space.is_valid(space.get(i)) and all(space.get(i).digits[p] in e for p, e in extremes.ends)}
    assert 0 < len(every) < len(space)
    visited = set(sorted(every)[:3])
    found = extremes.unvisited(np.random.default_rng(0), visited, near=[])
    assert {c.index for c in found} == every - visited


def test_a_full_space_gives_the_extreme_versions_of_the_configs_it_is_asked_about():
    preset = get_preset("G1")
    space = engine.create_task(preset.task_name, preset.args).config_space
    extremes = ExtremeConfigs(space)
    ordered = {p for p, _ in extremes.ends}
    assert len(ordered) >= 4
    rng = np.random.default_rng(1)
    near = space.sample(rng, 400)
    found = extremes.unvisited(rng, {near[0].index}, near)
    assert found and len({c.index for c in found}) == len(found)
    assert all(space.is_valid(c) and extremes.is_extreme(c) and c.index != near[0].index for c in found)
    # each one is a config of `near` with its ordered knobs moved to ends, the rest unchanged
    rest = {tuple(d for p, d in enumerate(c.digits) if p not in ordered) for c in near}
    assert all(tuple(d for p, d in enumerate(c.digits) if p not in ordered) in rest for c in found)


def test_after_the_first_batch_an_eighth_of_each_batch_is_the_models_favourite_extreme_configs_of_new_corners():
    task, measurer = broadcast()
    # at seeds 1-3 the model's two favourites share a corner, or stand in one already measured
    for seed in (1, 2, 3, 4):
        tuner = get_tuner("xgb", task, seed=seed)
        first = tuner.next_batch(4)
        tuner.update(first, measurer.measure(task, first))
        picks = tuner._extreme_picks(tuner._share_of(tuner.extreme_share, 16))
        assert len(picks) == 2 and all(tuner.extremes.is_extreme(c) for c in picks)
        # two corners none of the first batch is in, each pick its corner's favourite
        measured = {tuner.extremes.corner(c) for c in first if tuner.extremes.is_extreme(c)}
        corners = [tuner.extremes.corner(c) for c in picks]
        assert len(set(corners)) == 2 and not measured & set(corners), seed
        predicted = lambda configs: tuner.model.predict(tuner.features.of(configs))  # noqa: E731
        unvisited = tuner.extremes.unvisited(tuner.rng, tuner.visited, near=[])
        for pick, corner in zip(picks, corners):
            same = [c for c in unvisited if tuner.extremes.corner(c) == corner]
            assert predicted([pick])[0] >= predicted(same).max()
        batch = tuner.next_batch(16)
        assert sum(tuner.extremes.is_extreme(c) for c in batch) >= 2


def test_every_corner_gets_an_extreme_config_before_any_corner_gets_two():
    """conv-W6600 (issue 17): the model's favourite extreme configs were all of one corner, while
    the fast corner waited; the ordering takes one of each unmeasured corner, then the best
    measured corner's, whatever the model prefers."""
    task, measurer = broadcast()
    space = task.config_space
    extremes = ExtremeConfigs(space)
    every = extremes.unvisited(np.random.default_rng(0), set(), near=[])
    by_corner: dict[tuple, list] = {}
    for c in every:
        by_corner.setdefault(extremes.corner(c), []).append(c)
    assert len(by_corner) >= 3 and max(len(v) for v in by_corner.values()) >= 2
    slow, fast, *others = sorted(by_corner, key=lambda k: -len(by_corner[k]))
    # measured: one config of `slow` (score 1) and one of `fast` (score 5)
    measured = [by_corner[slow][0], by_corner[fast][0]]
    ranked = by_corner[slow][1:] + by_corner[fast][1:] + [c for k in others for c in by_corner[k]]
    order = extremes.corners_first(ranked, measured, [1.0, 5.0])
    assert sorted(c.index for c in order) == sorted(c.index for c in ranked)
    # first the favourite (the first in `ranked`) of each corner not measured, in ranked order
    assert order[:len(others)] == [by_corner[k][0] for k in others]
    # then the best measured corner's configs, then the other measured corner's, ranked order kept
    after = order[len(others):]
    assert after[:len(by_corner[fast]) - 1] == by_corner[fast][1:]
    assert after[len(by_corner[fast]) - 1:len(by_corner[fast]) + len(by_corner[slow]) - 2] == by_corner[slow][1:]
    # and last the second favourites of the corners measured only now
    assert [extremes.corner(c) for c in after[len(by_corner[fast]) + len(by_corner[slow]) - 2:]] == [
        k for k in others for _ in by_corner[k][1:]]


def test_no_share_or_no_ordered_knob_is_the_tuner_without_extreme_configs_seed_for_seed():
    task, measurer = broadcast()
    plain = get_tuner("xgb", task, seed=3, extreme_share=0.0)
    bare = get_tuner("xgb", task, seed=3)
    bare.extremes.ends = []  # as on a space without an ordered knob
    with_them = get_tuner("xgb", task, seed=3)
    runs = []
    for tuner in (plain, bare, with_them):
        proposed = []
        for _ in range(5):
            batch = tuner.next_batch(tuner.batch_size(16))
            tuner.update(batch, measurer.measure(task, batch))
            proposed += [c.index for c in batch]
        runs.append(proposed)
    assert runs[0] == runs[1] and runs[2] != runs[0]
    assert len(plain._incumbents()) <= plain.basins and len(with_them._incumbents()) <= with_them.basins + 1


def test_a_share_of_a_slot_is_a_slot_that_often():
    tuner = get_tuner("xgb", c12_task(), seed=0)
    slots = [tuner._share_of(0.125, 4) for _ in range(2000)]
    assert set(slots) == {0, 1} and abs(np.mean(slots) - 0.5) < 0.05


def test_the_best_extreme_config_measured_is_an_incumbent_of_the_local_moves():
    task, measurer = broadcast()
    for seed in range(20):
        tuner = get_tuner("xgb", task, seed=seed, basins=1)
        batch = tuner.next_batch(16)
        tuner.update(batch, measurer.measure(task, batch))
        best = max(zip(tuner._measured, tuner._scores), key=lambda pair: pair[1])[0]
        ran = [(c, s) for c, s in zip(tuner._measured, tuner._scores) if s > 0 and tuner.extremes.is_extreme(c)]
        if ran and not tuner.extremes.is_extreme(best):
            break
    else:
        raise AssertionError("no seed measured an extreme config below a better other one")
    best_extreme = max(ran, key=lambda pair: pair[1])[0]
    assert tuner._incumbents() == [best.digits, best_extreme.digits]
