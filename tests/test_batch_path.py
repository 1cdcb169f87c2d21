"""The batch path (engine.columns) against the per-config one it stands in for.

The annealer asks about many configs at once: validity (`valid_mask`), features
(`FeatureTable.of` on `ConfigColumns`), one-knob neighbours (`random_neighbours`). For every
template, on random configs of its presets and of its small contract workload, the batch
answers must be the per-config answers exactly (features bit for bit after the float32 row);
templates without a batch path go through the per-config fallback and must agree too.
"""
from __future__ import annotations

import heapq
import math
import zlib

import numpy as np
import pytest

import engine
from engine.columns import ConfigColumns, random_neighbours, valid_mask
from engine.ops.base import knob_features
from engine.space import ConfigSpace, OtherKnob, SplitKnob
from engine.tuners.features import FeatureTable
from engine.tuners.sa import SimulatedAnnealingOptimizer, _TopK
from engine.workloads import PRESETS, depthwise_args
from test_template_contract import SMALL_WORKLOADS

# Every template's small contract workload, every preset (a full space each), and a depthwise
# channel multiplier > 1, which no preset has (MobileNet's is 1): 3 output channels per input
# channel, so a block of f channels may start inside a channel's group (input_channels_per_block).
WORKLOADS = [(name, args, "small") for name, args in sorted(SMALL_WORKLOADS.items())] + [
    (preset.task_name, preset.args, key) for key, preset in sorted(PRESETS.items())] + [
    ("depthwise_conv2d_nchw.cuda", depthwise_args(10, 8, 1, multiplier=3), "depthwise-multiplier-3")]
BATCH_TEMPLATES = {"conv2d_nchw.cuda", "conv2d_no_batching", "depthwise_conv2d_nchw.cuda"}


@pytest.mark.parametrize("name, args, label", WORKLOADS, ids=[label for _, _, label in WORKLOADS])
def test_batch_validity_and_features_equal_the_per_config_ones(name, args, label):
    task = engine.create_task(name, args)
    space = task.config_space
    rng = np.random.default_rng(zlib.crc32(label.encode()))  # the same draws in every process
    # Validity on random indexes, valid or not (most of a full space is invalid).
    columns = ConfigColumns.of_indexes(space, rng.integers(0, space.total, size=300))
    expected = [space.why_invalid(config) is None for config in columns]
    assert valid_mask(space, columns).tolist() == expected
    if task.template.has_batch_path:
        broken = task.template.invalid_of_columns(task.params, columns, task.limits)
        assert (~broken).tolist() == expected
    # Features on valid configs, as the tuner asks for them; every row as the per-config one.
    configs = [task.default_config(), *space.sample(rng, 40)]
    table = FeatureTable(task)
    batch = table.of(ConfigColumns.of_configs(space, configs))
    one_by_one = np.vstack([table.vector(task, config) for config in configs])
    assert batch.dtype == np.float32 and batch.shape == one_by_one.shape
    assert np.array_equal(batch, one_by_one, equal_nan=True)
    assert np.array_equal(table.of(configs), one_by_one, equal_nan=True)  # a plain list too


def test_the_direct_and_depthwise_convolutions_have_a_batch_path():
    have = {name for name in engine.TEMPLATES if engine.create_task(name, SMALL_WORKLOADS[name]).template.has_batch_path}
    assert have == BATCH_TEMPLATES


@pytest.mark.parametrize("restricted", [False, True], ids=["full", "restricted"])
def test_valid_mask_asks_config_by_config_where_a_rule_is_a_plain_callable(restricted):
    """A plain function rule has no `invalid_mask`: with it, every rule is asked config by config
    (the template's batch check too), in a full space and in a restricted view."""
    task = engine.create_task(PRESETS["C12"].task_name, PRESETS["C12"].args)
    calls = []

    def odd_unroll(config):  # a plain callable, as ConfigSpace's rules are
        calls.append(config.index)
        return "odd" if config["unroll_explicit"].val == 1 and config.index % 3 == 0 else None

    rng = np.random.default_rng(13)
    # Random indexes (most invalid) and valid ones, so that the plain rule has some to reject.
    indexes = [*rng.integers(0, task.config_space.total, size=150).tolist(),
               *(c.index for c in task.config_space.sample(rng, 150))]
    space = task.config_space.with_rules([*task.config_space.rules, odd_unroll])
    if restricted:  # a view keeping two in three of them
        space = space.restrict(indexes[::3] + indexes[1::3])
    columns = ConfigColumns.of_indexes(space, indexes)
    mask = valid_mask(space, columns)
    assert calls  # valid_mask asked the plain rule
    assert mask.tolist() == [space.why_invalid(config) is None for config in columns]
    # The template's rule alone goes in bulk; the plain rule rejects some configs it passes.
    alone = space.with_rules(task.config_space.rules)
    assert alone.rules[0].invalid_mask is not None
    assert (valid_mask(alone, ConfigColumns.of_indexes(alone, indexes)) & ~mask).any()


def test_columns_are_the_configs_they_stand_for():
    task = engine.create_task(PRESETS["C12"].task_name, PRESETS["C12"].args)
    space = task.config_space
    indexes = np.random.default_rng(1).integers(0, space.total, size=50)
    columns = ConfigColumns.of_indexes(space, indexes)
    assert [c.index for c in columns] == indexes.tolist()
    assert [c.digits for c in columns] == [space.get(int(i)).digits for i in indexes]
    assert columns["tile_f"].size[2].tolist() == [space.get(int(i))["tile_f"].size[2] for i in indexes]
    assert columns["unroll_explicit"].val.tolist() == [space.get(int(i))["unroll_explicit"].val for i in indexes]


def one_knob_apart(a, b) -> bool:
    return sum(x != y for x, y in zip(a.digits, b.digits)) == 1


@pytest.mark.parametrize("preset", ["C12", "D1", "TC-4096-bf16"])
def test_bulk_neighbours_change_exactly_one_knob_and_are_valid(preset):
    """TC-4096-bf16: a template without a batch path, whose space pins knobs to its mainloop."""
    task = engine.create_task(PRESETS[preset].task_name, PRESETS[preset].args)
    space = task.config_space
    rng = np.random.default_rng(3)
    start = ConfigColumns.of_configs(space, space.sample(rng, 64))
    moved = random_neighbours(space, start, rng)
    for before, after in zip(start, moved):
        assert one_knob_apart(before, after), (before.index, after.index)
        assert space.why_invalid(after) is None
        assert after.index == space.index_from_digits(after.digits)


def test_bulk_neighbours_stay_in_a_restricted_view():
    task = engine.create_task(PRESETS["C12"].task_name, PRESETS["C12"].args)
    full = task.config_space
    rng = np.random.default_rng(5)
    kept = [c.index for c in full.sample(rng, 300)]
    view = full.restrict(kept)
    start = ConfigColumns.of_indexes(view, kept[:40])
    moved = random_neighbours(view, start, rng)
    assert all(c.index in view and view.is_valid(c) for c in moved)
    # Sparse: most configs have no one-knob neighbour kept, and move to the nearest kept one.
    assert sum(c.index != s.index for c, s in zip(moved, start)) == 40


def test_annealing_a_restricted_view_too_big_to_score_whole_keeps_to_the_view():
    task = engine.create_task(PRESETS["C12"].task_name, PRESETS["C12"].args)
    rng = np.random.default_rng(7)
    view = task.config_space.restrict(int(i) for i in rng.integers(0, task.config_space.total, size=60_000))
    assert len(view) > 20_000
    optimizer = SimulatedAnnealingOptimizer(view, rng, n_iter=30, parallel_size=32)
    found = optimizer.find_maximums(lambda configs: np.array([float(c.index % 997) for c in configs]), 8, set())
    assert len({c.index for c in found}) == 8
    assert all(c.index in view and view.is_valid(c) for c in found)


def test_annealing_a_space_without_a_batch_path_falls_back_to_config_by_config():
    task = engine.create_task(PRESETS["TC-4096-bf16"].task_name, PRESETS["TC-4096-bf16"].args)
    table = FeatureTable(task)
    weights = np.random.default_rng(0).random(len(table.names))
    optimizer = SimulatedAnnealingOptimizer(task.config_space, np.random.default_rng(1), n_iter=10, parallel_size=16)
    found = optimizer.find_maximums(lambda configs: table.of(configs) @ weights, 5, set())
    assert len(found) == 5 and all(task.why_invalid(c) is None for c in found)


def in_order_top_k(k, exclude, offers):
    """The top-k as the annealer kept it before the batch path: every offer walked in order."""
    heap, kept, changes = [], {}, []
    for indexes, scores in offers:
        changed = False
        for index, value in zip(indexes, scores):
            if index in kept or index in exclude:
                continue
            if len(heap) < k:
                heapq.heappush(heap, (float(value), index))
            elif value > heap[0][0]:
                _, dropped = heapq.heapreplace(heap, (float(value), index))
                del kept[dropped]
            else:
                continue
            kept[index] = True
            changed = True
        changes.append(changed)
    return [index for _, index in sorted(heap, reverse=True)], changes


def test_the_top_k_walked_best_first_keeps_what_walking_in_order_kept():
    task = engine.create_task(PRESETS["C12"].task_name, PRESETS["C12"].args)
    space = task.config_space
    rng = np.random.default_rng(11)
    for trial in range(200):
        k = int(rng.integers(1, 12))
        exclude = set(rng.integers(0, 60, size=5).tolist())
        offers = []
        for _ in range(int(rng.integers(1, 6))):
            indexes = rng.integers(0, 60, size=int(rng.integers(1, 30)))
            # Scores a function of the index (a model scores a config the same every time), few values: ties.
            offers.append((indexes.tolist(), (indexes % 7).astype(np.float64)))
        expected, changes = in_order_top_k(k, exclude, offers)
        top = _TopK(k, exclude)
        got = [top.offer(ConfigColumns.of_indexes(space, i), s) for i, s in offers]
        assert [c.index for c in top.ranked()] == expected, trial
        assert got == changes, trial


def test_columns_of_text_and_tuple_valued_knobs_hold_the_values_themselves():
    space = ConfigSpace([SplitKnob("s", 12, 3), OtherKnob("pipeline", ["ring", "tree"]),
                         OtherKnob("shape", [(1, 2), (3, 4), (5, 6)]), OtherKnob("flag", [False, True])])
    columns = ConfigColumns.of_indexes(space, range(space.total))
    configs = list(columns)
    assert columns["shape"].val.tolist() == [c["shape"].val for c in configs]
    assert columns["pipeline"].val.tolist() == [c["pipeline"].val for c in configs]
    # What knob_features makes of them: a text value's position, a bool as a number, log2 of parts.
    assert columns["pipeline"].number.tolist() == [float(c.digits[1]) for c in configs]
    assert columns["flag"].number.tolist() == [float(c["flag"].val) for c in configs]
    assert columns["s"].log2[1].tolist() == [math.log2(c["s"].size[1]) for c in configs]
    # A value with no number (a tuple): NaN in the columns' table, which every space's columns build;
    # per config, knob_features raises (engine.columns._table_number says why they differ).
    assert np.isnan(columns["shape"].number).all()
    with pytest.raises(TypeError):
        knob_features(configs[0])
