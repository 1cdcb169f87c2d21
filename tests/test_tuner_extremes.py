"""Extreme configs (every ordered knob at an end) and the share of the XGBoost tuner's batches
they get: on the C12 recording (a restricted space, enumerated) and the full C12 space (sampled)."""
from __future__ import annotations

import numpy as np

from engine.synthetic import synthetic_result
from engine.tuners import get_tuner
from engine.tuners.extremes import ExtremeConfigs

from synthetic_fixtures import c12_task, replayed_c12


def ordered_ends(space):
    """By hand: (position, smallest, largest option) of each knob of numbers with more than two used values."""
    ends = []
    for position, knob in enumerate(space.knobs):
        used = space.used_options(position)
        values = [knob.value(o).val for o in used] if knob.kind == "ot" else []
        if knob.kind == "ot" and len(used) > 2 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            ends.append((position, used[int(np.argmin(values))], used[int(np.argmax(values))]))
    return ends


def test_only_knobs_of_more_than_two_numbers_have_ends():
    space = c12_task().config_space
    extremes = ExtremeConfigs(space)
    assert [(p, *e) for p, e in extremes.ends] == ordered_ends(space)
    names = [space.knobs[p].name for p, _ in extremes.ends]
    assert names == ["auto_unroll_max_step"]  # the tile splits and unroll_explicit (0/1) are free


def test_a_restricted_space_gives_every_unvisited_extreme_config():
    task, _ = replayed_c12()
    space = task.config_space
    ((position, ends),) = ExtremeConfigs(space).ends
    every = {i for i in space.iter_indexes() if space.get(i).digits[position] in ends and space.is_valid(space.get(i))}
    visited = set(list(every)[:10])
    found = ExtremeConfigs(space).unvisited(np.random.default_rng(0), visited, near=[])
    assert {c.index for c in found} == every - visited


def test_a_full_space_gives_the_extreme_versions_of_the_configs_it_is_asked_about():
    space = c12_task().config_space
    extremes = ExtremeConfigs(space)
    (position, ends), = extremes.ends
    rng = np.random.default_rng(1)
    near = space.sample(rng, 60)
    visited = {near[0].index}
    found = extremes.unvisited(rng, visited, near)
    assert 20 <= len(found) <= 60 and len({c.index for c in found}) == len(found)
    assert all(space.is_valid(c) and extremes.is_extreme(c) and c.index not in visited for c in found)
    # each one is a config of `near` with the ordered knob moved to an end, the rest unchanged
    others = {tuple(d for p, d in enumerate(c.digits) if p != position) for c in near}
    assert all(tuple(d for p, d in enumerate(c.digits) if p != position) in others for c in found)


def test_after_the_first_batch_an_eighth_of_each_batch_is_the_models_favourite_extreme_configs():
    task, measurer = replayed_c12()
    tuner = get_tuner("xgb", task, seed=4)
    first = tuner.next_batch(tuner.batch_size(16))
    tuner.update(first, measurer.measure(task, first))
    picks = tuner._extreme_picks(tuner._share_of(tuner.extreme_share, 16))
    assert len(picks) == 2 and all(tuner.extremes.is_extreme(c) for c in picks)
    rest = [c for c in tuner.extremes.unvisited(tuner.rng, tuner.visited, near=[]) if c not in picks]
    predicted = lambda configs: tuner.model.predict(tuner.features.of(configs))  # noqa: E731
    assert predicted(picks).min() >= predicted(rest).max()

    none = get_tuner("xgb", task, seed=4, extreme_share=0.0)
    none.update(first, measurer.measure(task, first))
    assert none._extreme_picks(none._share_of(none.extreme_share, 16)) == []


def test_a_share_of_a_slot_is_a_slot_that_often():
    tuner = get_tuner("xgb", c12_task(), seed=0)
    slots = [tuner._share_of(0.125, 4) for _ in range(2000)]
    assert set(slots) == {0, 1} and abs(np.mean(slots) - 0.5) < 0.05


def test_the_best_extreme_config_measured_is_an_incumbent_of_the_local_moves():
    task = c12_task()
    tuner = get_tuner("xgb", task, seed=1, basins=1)  # the best config measured is not an extreme one
    batch = tuner.next_batch(16)
    tuner.update(batch, [synthetic_result(task, config) for config in batch])
    best = max(zip(tuner._measured, tuner._scores), key=lambda pair: pair[1])[0]
    ran = [(c, s) for c, s in zip(tuner._measured, tuner._scores) if s > 0 and tuner.extremes.is_extreme(c)]
    best_extreme = max(ran, key=lambda pair: pair[1])[0]
    assert not tuner.extremes.is_extreme(best)
    assert tuner._incumbents() == [best.digits, best_extreme.digits]
