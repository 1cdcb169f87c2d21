"""Contract tests every registered tuner passes, against a replayed synthetic recording
(Kernel Tuner's way: no GPU needed), then the XGBoost tuner's own promises."""
from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.callbacks import StopTuning
from engine.measure import DeviceInfo
from engine.logfile import ErrorNo, read_records
from engine.replay import ReplayMeasurer, restrict_to_recording
from engine.synthetic import MODEL, synthetic_recording, synthetic_result
from engine.tuners import TUNERS, UnknownTuner, get_tuner
from engine.tuners.base import score_of
from engine.tuners.sa import SimulatedAnnealingOptimizer
from engine.tuners.xgb import diverse_pick
from engine.workloads import get_preset

from synthetic_fixtures import c12_recording, c12_task, replayed_c12

ALL_TUNERS = sorted(TUNERS)


def measured_indexes(name, n_trial, seed=0, batch_size=16):
    task, measurer = replayed_c12()
    result = engine.tune(task, get_tuner(name, task, seed=seed), measurer, n_trial, batch_size=batch_size)
    return [record.config_index for record in result.results]


@pytest.mark.parametrize("name", ALL_TUNERS)
def test_it_proposes_only_valid_configs_it_never_proposed_before(name):
    task, measurer = replayed_c12()
    tuner = get_tuner(name, task, seed=3)
    seen = set()
    for _ in range(6):
        batch = tuner.next_batch(16)
        assert len(batch) == 16
        assert all(task.config_space.is_valid(config) for config in batch)
        indexes = {config.index for config in batch}
        assert len(indexes) == 16 and not indexes & seen
        seen |= indexes
        tuner.update(batch, measurer.measure(task, batch))


@pytest.mark.parametrize("name", ALL_TUNERS)
def test_it_measures_exactly_the_trial_budget(name):
    indexes = measured_indexes(name, 70, batch_size=16)
    assert len(indexes) == 70
    assert len(set(indexes)) == 70


@pytest.mark.parametrize("name", ALL_TUNERS)
def test_the_same_seed_gives_the_same_run(name):
    assert measured_indexes(name, 100, seed=7) == measured_indexes(name, 100, seed=7)


@pytest.mark.parametrize("name", ["random", "ga", "xgb", "tpe", "cmaes"])
def test_different_seeds_give_different_runs(name):
    assert measured_indexes(name, 40, seed=1) != measured_indexes(name, 40, seed=2)


@pytest.mark.parametrize("name", ALL_TUNERS)
def test_it_keeps_tuning_when_every_measurement_fails(name):
    task = replayed_c12()[0]
    nothing_recorded = ReplayMeasurer([], device=DeviceInfo(model=MODEL, is_replay=True))
    result = engine.tune(task, get_tuner(name, task, seed=0), nothing_recorded, 150, batch_size=32)
    assert result.trials == 150
    assert result.best is None
    assert {record.error_no for record in result.results} == {ErrorNo.UNKNOWN_ERROR}


@pytest.mark.parametrize("name", ALL_TUNERS)
def test_it_stops_when_the_space_runs_out(name):
    task, measurer = replayed_c12()
    small = restrict_to_recording(task, c12_recording()[:40])
    tuner = get_tuner(name, small, seed=0)
    result = engine.tune(small, tuner, measurer, 100, batch_size=16)
    assert sorted(r.config_index for r in result.results) == sorted(small.config_space.iter_indexes())
    assert not tuner.has_next()
    assert tuner.next_batch(8) == []


@pytest.mark.parametrize("name", ALL_TUNERS)
def test_load_history_marks_configs_measured_and_skips_other_workloads(name):
    task, _ = replayed_c12()
    history = list(c12_recording()[:100])
    other = synthetic_recording(engine.create_task("conv2d_nchw.cuda", get_preset("C9").args), 20, seed=1)
    tuner = get_tuner(name, task, seed=0)
    assert tuner.load_history(history + other) == 100
    proposed = {c.index for _ in range(5) for c in tuner.next_batch(20)}
    assert not proposed & {r.config_index for r in history}


def test_an_unknown_tuner_is_refused_with_the_valid_names():
    with pytest.raises(UnknownTuner, match="unknown tuner 'anneal'; valid tuners: cmaes, ga, grid, random, tpe, xgb"):
        get_tuner("anneal", c12_task())


# -- the XGBoost tuner -----------------------------------------------------------------
def trials_to_reach(name, seed, share=0.95, budget=600):
    """Trials a tuner needs to measure a config within `share` of the recording's best."""
    task, measurer = replayed_c12()
    target = min(r.mean_cost for r in c12_recording() if r.ok) / share

    def stop_at_target(state, configs, results):
        if state.best is not None and state.best.mean_cost <= target:
            raise StopTuning("reached")

    result = engine.tune(task, get_tuner(name, task, seed=seed), measurer, budget, callbacks=[stop_at_target])
    reached = result.best is not None and result.best.mean_cost <= target
    return result.trials if reached else budget + 1


def test_xgb_reaches_95_percent_of_the_best_in_far_fewer_trials_than_random():
    seeds = range(7)
    xgb = np.median([trials_to_reach("xgb", seed) for seed in seeds])
    random = np.median([trials_to_reach("random", seed) for seed in seeds])
    assert xgb * 2 <= random, (xgb, random)


def synthetic_gflops(task, configs, records):
    by_index = {r.config_index: r for r in records}
    return [task.flops / by_index[c.index].mean_cost / 1e9 if by_index[c.index].ok else 0.0 for c in configs]


def test_transfer_from_another_workload_makes_the_first_plan_better_than_random():
    task, _ = replayed_c12()
    c9 = engine.create_task("conv2d_nchw.cuda", get_preset("C9").args)
    earlier = synthetic_recording(c9, 600, seed=5)
    warm = get_tuner("xgb", task, seed=0, transfer_from=earlier).next_batch(32)
    cold = get_tuner("random", task, seed=0).next_batch(32)
    warm_score = np.median(synthetic_gflops(task, warm, c12_recording()))
    cold_score = np.median(synthetic_gflops(task, cold, c12_recording()))
    assert warm_score > 2 * cold_score, (warm_score, cold_score)


def test_transfer_from_real_tophub_records_skips_what_it_cannot_rebuild(tophub_log):
    with open(tophub_log, encoding="utf-8") as stream:
        tophub = read_records(stream)  # five GPUs, conv2d, depthwise and winograd (no template here)
    tuner = get_tuner("xgb", replayed_c12()[0], seed=0)
    assert tuner.transfer(tophub) is True
    assert len(tuner.next_batch(16)) == 16


def test_simulated_annealing_finds_configs_the_model_scores_best_in_a_full_space():
    task = c12_task()
    assert len(task.config_space) > 800_000  # too big to score whole: the chains must walk

    def score(configs):
        features = [task.features(c) for c in configs]
        return np.array([-abs(np.log2(f["threads_per_block"]) - 8) - abs(np.log2(f["work_per_thread"]) - 4)
                         for f in features])

    rng = np.random.default_rng(0)
    optimizer = SimulatedAnnealingOptimizer(task.config_space, rng, n_iter=200, parallel_size=64)
    found = optimizer.find_maximums(score, 10, exclude=set())
    sampled = task.config_space.sample(rng, len(found) * 64 * 10)
    assert len({c.index for c in found}) == 10
    assert np.median(score(found)) >= np.percentile(score(sampled), 99)


def test_the_diversity_filter_prefers_new_knob_values_over_near_duplicates():
    task = c12_task()
    start = task.default_config()
    near = [start] + [task.config_space.neighbour(start, np.random.default_rng(i)) for i in range(5)]
    far = task.config_space.sample(np.random.default_rng(9), 5)
    picked = diverse_pick(near + far, 4)
    assert picked[0] == start
    assert sum(c in far for c in picked) >= 2


def test_xgb_keeps_exploring_at_random_after_its_first_model():
    task, measurer = replayed_c12()
    tuner = get_tuner("xgb", task, seed=4)
    off_plan = 0
    for batch_number in range(12):
        planned = {config.index for config in tuner._plan}
        local = {config.index for config in tuner._local_moves(16)} if tuner._measured else set()
        batch = tuner.next_batch(16)
        if batch_number >= 2:  # the model has been fitted: every batch starts from a plan
            assert planned
            off_plan += sum(config.index not in planned | local for config in batch)
        tuner.update(batch, measurer.measure(task, batch))
    assert off_plan >= 3  # epsilon 0.05 of 160 slots: about 8 random configs, not none


def test_xgb_asks_for_small_batches_until_it_has_measured_a_hundred_or_so():
    task, measurer = replayed_c12()
    sizes = []
    engine.tune(task, get_tuner("xgb", task, seed=0), measurer, 200, batch_size=16,
                callbacks=[lambda state, configs, results: sizes.append(len(configs))])
    assert sum(sizes) == 200
    assert sizes[0] == 4 and sizes[:-1] == sorted(sizes[:-1]) and max(sizes) == 16, sizes
    # the first model acts after 4 trials, not after a batch of 16; the batch grows by an eighth
    # of what is measured (a refit every 8 trials at 64 measured), reaching 16 at 128
    before = [sum(sizes[:k]) for k in range(len(sizes))]
    assert all(size == max(4, min(16, done // 8)) for size, done in zip(sizes[:-1], before)), sizes
    assert before[sizes.index(16)] >= 128


def test_xgb_tries_one_knob_moves_from_the_best_configs_measured():
    task = c12_task()  # the full space: a sparse recording keeps few of a config's neighbours
    tuner = get_tuner("xgb", task, seed=1)
    first = tuner.next_batch(16)
    results = [synthetic_result(task, config) for config in first]
    tuner.update(first, results)
    best = max(zip(first, results), key=lambda pair: score_of(task, pair[1]))[0]
    incumbents = tuner._incumbents()
    batch = tuner.next_batch(16)
    one_knob_away = [c for c in batch if any(sum(a != b for a, b in zip(c.digits, d)) == 1 for d in incumbents)]
    assert len(one_knob_away) >= 3, [c.digits for c in batch]
    assert any(sum(a != b for a, b in zip(c.digits, best.digits)) == 1 for c in batch)


def knobs_apart(a, b):
    return sum(x != y for x, y in zip(a.digits, b.digits))


def test_xgb_local_moves_are_new_valid_configs_near_the_best_of_several_basins():
    task = c12_task()  # the full space: a sparse recording keeps few of a config's neighbours
    tuner = get_tuner("xgb", task, seed=2)  # four basins, two knobs apart
    batch = tuner.next_batch(16)
    tuner.update(batch, [synthetic_result(task, config) for config in batch])
    incumbents = [task.config_space.get(task.config_space.index_from_digits(d)) for d in tuner._incumbents()]
    assert len(incumbents) == 4
    assert all(knobs_apart(a, b) >= 2 for i, a in enumerate(incumbents) for b in incumbents[i + 1:])
    best = max(zip(tuner._measured, tuner._scores), key=lambda pair: pair[1])[0]
    assert incumbents[0] == best
    moves = tuner._local_moves(8)
    assert len(moves) == 8 and len({c.index for c in moves}) == 8
    assert all(task.config_space.is_valid(c) and c.index not in tuner.visited for c in moves)
    origins = [min(range(4), key=lambda k: knobs_apart(c, incumbents[k])) for c in moves]
    assert all(knobs_apart(c, incumbents[k]) == 1 for c, k in zip(moves, origins))
    assert len(set(origins)) >= 3, origins  # the incumbents take turns: one basin cannot fill every slot


def test_ga_breeds_a_whole_generation_inside_a_restricted_space():
    task, measurer = replayed_c12()
    assert len(task.config_space.used_options(0)) < task.config_space.radixes[0]
    tuner = get_tuner("ga", task, seed=0, pop_size=32, mutation_prob=0.5)
    first = tuner.next_batch(32)
    tuner.update(first, measurer.measure(task, first))
    children = tuner._breed()
    assert len(children) == 32 - tuner.elite_num
    assert all(task.config_space.is_valid(child) for child in children)


def test_used_options_are_those_the_kept_configs_take():
    task = replayed_c12()[0]
    space = task.config_space
    kept = [space.get(i) for i in space.iter_indexes()]
    for position in range(len(space.knobs)):
        assert space.used_options(position) == sorted({c.digits[position] for c in kept})
    assert c12_task().config_space.used_options(0) == list(range(c12_task().config_space.radixes[0]))


def test_the_default_tuner_is_a_registered_one():
    from engine.tuners import DEFAULT_TUNER

    assert DEFAULT_TUNER in TUNERS


def test_a_kernel_without_a_flop_count_is_scored_by_speed():
    import dataclasses

    from engine.measure import MeasureResult

    no_flops = dataclasses.replace(c12_task(), flops=0)
    fast, slow = MeasureResult(ErrorNo.NO_ERROR, (1e-5,)), MeasureResult(ErrorNo.NO_ERROR, (2e-5,))
    assert score_of(no_flops, fast) > score_of(no_flops, slow) > 0
    assert score_of(no_flops, MeasureResult.failure(ErrorNo.RUNTIME_DEVICE, "boom")) == 0


class RooflineStandIn(engine.measure.Measurer):
    """A measurer for the tensor-core GEMM's own space: each config costs its tile waste over its
    blocks (deterministic, no GPU), so the tuners' models have something to learn."""

    device = DeviceInfo(model="h200", compute_capability="9.0")

    def measure(self, task, configs):
        from engine.measure import MeasureResult

        results = []
        for config in configs:
            f = task.features(config)
            cost = 1e-5 * f["tile_waste"] * (1 + 132 / f["blocks"])
            results.append(MeasureResult(error_no=ErrorNo.NO_ERROR, costs=(cost,), all_cost=cost, timestamp=0.0))
        return results


@pytest.mark.parametrize("name", ALL_TUNERS)
def test_it_tunes_the_tensor_core_gemm_of_a_decode_step_in_its_full_space(name):
    """The space of gemm_tensorcore is 1.5 million configs, of which 1 in 700 is valid on a decode
    shape: sampling must find hundreds (the mainloops' pins), and every proposal must be valid."""
    from engine.workloads import gemm_tc_args

    task = engine.create_task("gemm_tensorcore", gemm_tc_args(16, 4096, 4096, "bfloat16"))
    result = engine.tune(task, get_tuner(name, task, seed=3), RooflineStandIn(), 96, batch_size=32)
    indexes = [record.config_index for record in result.results]
    assert len(indexes) == len(set(indexes)) == 96
    assert all(task.why_invalid(task.config_space.get(i)) is None for i in indexes)
