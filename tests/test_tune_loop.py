"""The tuning loop: budget, logging through engine.logfile, resume after a kill, early stopping."""
from __future__ import annotations

import io
import threading

import pytest

import engine
from engine.callbacks import StopTuning, early_stopping as stop_early, log_to_file, progress_printer
from engine.logfile import read_history, read_records
from engine.tuners import get_tuner

from synthetic_fixtures import CountingReplayMeasurer, c12_recording, replayed_c12


def run(log_file, n_trial, name="xgb", seed=0, callbacks=(), measurer=None, early_stopping=None, **options):
    """Tune as the command line does: the log's records are the history, and it is appended to."""
    task, replay = replayed_c12()
    measurer = measurer or replay
    callbacks = [log_to_file(str(log_file)), *callbacks]
    if early_stopping:
        callbacks.append(stop_early(early_stopping))
    return engine.tune(task, get_tuner(name, task, seed=seed), measurer, n_trial,
                       history=read_history(log_file), callbacks=callbacks, **options)


def test_every_measurement_is_logged_and_reads_back_the_same(tmp_path):
    log = tmp_path / "tune.log"
    result = run(log, 40, name="random")
    with open(log, encoding="utf-8") as stream:
        logged = read_records(stream)
    assert [(r.config_index, r.costs, r.error_no, r.entity) for r in logged] == [
        (r.config_index, r.costs, r.error_no, r.entity) for r in result.results
    ]
    assert all(r.target == "cuda -model=synthetic-h200" for r in logged)
    assert result.best == min((r for r in logged if r.ok), key=lambda r: r.mean_cost)


def test_a_rerun_after_a_kill_measures_only_the_configs_not_in_the_log(tmp_path):
    log = tmp_path / "tune.log"

    killed_at = []

    def killed_after_48_trials(state, configs, results):
        if state.trials >= 48:
            killed_at.append(state.trials)
            raise KeyboardInterrupt  # the process dies; the log holds what was measured

    with pytest.raises(KeyboardInterrupt):
        run(log, 100, callbacks=[killed_after_48_trials])
    with open(log, encoding="utf-8") as stream:
        first = [r.config_index for r in read_records(stream)]
    assert len(first) == killed_at[0] >= 48  # whole batches: the tuner's grow from 4 to 16

    counting = CountingReplayMeasurer(c12_recording())
    result = run(log, 100, measurer=counting)
    assert len(counting.measured) == 100 - len(first)
    assert not set(counting.measured) & set(first)
    assert (result.trials, result.resumed) == (100 - len(first), len(first))
    with open(log, encoding="utf-8") as stream:
        assert len({r.config_index for r in read_records(stream)}) == 100


def test_rerunning_a_finished_run_measures_nothing(tmp_path):
    log = tmp_path / "tune.log"
    first = run(log, 30, name="ga")
    counting = CountingReplayMeasurer(c12_recording())
    again = run(log, 30, name="ga", measurer=counting)
    assert counting.measured == []
    assert again.best == first.best and again.trials == 0


def test_resume_ignores_records_of_another_gpu(tmp_path):
    log = tmp_path / "tune.log"
    run(log, 20, name="random")
    text = log.read_text().replace("-model=synthetic-h200", "-model=v100")
    log.write_text(text)
    counting = CountingReplayMeasurer(c12_recording())
    result = run(log, 20, name="random", measurer=counting)
    assert (result.resumed, len(counting.measured)) == (0, 20)


def test_early_stopping_ends_the_run_after_that_many_trials_without_improvement(tmp_path):
    seen = []
    result = run(tmp_path / "tune.log", 1500, name="grid", early_stopping=50, batch_size=10,
                 callbacks=[lambda state, c, r: seen.append((state.trials, state.best_trial))])
    assert result.stopped_early
    trials, best_trial = seen[-1]
    assert trials < 1500 and 50 <= trials - best_trial < 60


def test_a_callback_can_stop_the_run_and_sees_the_state(tmp_path):
    out = io.StringIO()

    def stop_at_32(state, configs, results):
        assert len(configs) == len(results) == 16
        if state.trials >= 32:
            raise StopTuning("enough")

    result = run(tmp_path / "tune.log", 200, name="random", callbacks=[progress_printer(out), stop_at_32])
    assert result.trials == 32 and result.stopped_early
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[conv2d_nchw.cuda] trials 16/200  best ") and "GFLOPS" in lines[0]
    assert lines[1].startswith("[conv2d_nchw.cuda] trials 32/200")


def test_history_in_and_callbacks_out_write_nothing_of_their_own(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    task, measurer = replayed_c12()
    first = engine.tune(task, get_tuner("random", task, seed=1), measurer, 32)
    task, measurer = replayed_c12()
    stored = []
    again = engine.tune(task, get_tuner("random", task, seed=2), measurer, 48, history=first.results,
                        callbacks=[lambda state, configs, results: stored.extend(state.records[-len(configs):])])
    assert (again.resumed, again.trials) == (32, 16)
    assert stored == again.results  # each new measurement reaches the callback once, the history never
    assert not {r.config_index for r in stored} & {r.config_index for r in first.results}
    assert list(tmp_path.iterdir()) == []


def test_tune_refuses_a_negative_budget():
    task, measurer = replayed_c12()
    with pytest.raises(ValueError, match="n_trial >= 0"):
        engine.tune(task, get_tuner("random", task), measurer, -1)


class ThreadNotingReplayMeasurer(CountingReplayMeasurer):
    """A replay that notes which thread measured each batch."""

    def __init__(self, records):
        super().__init__(records)
        self.threads = []

    def measure(self, task, configs):
        self.threads.append(threading.current_thread() is threading.main_thread())
        return super().measure(task, configs)


def test_the_next_batch_is_proposed_while_the_current_one_is_measured():
    task, _ = replayed_c12()
    measurer = ThreadNotingReplayMeasurer(c12_recording())
    tuner = get_tuner("xgb", task, seed=0, first_batch=16)  # whole batches from the first
    events = []
    for method in ("next_batch", "update"):
        def noted(*args, _original=getattr(tuner, method), _name=method):
            events.append(_name)
            return _original(*args)

        setattr(tuner, method, noted)
    result = engine.tune(task, tuner, measurer, 64, batch_size=16, overlap=True)
    assert result.trials == 64 and len(set(measurer.measured)) == 64
    # Each batch after the first is proposed before the one in flight is learned from.
    assert events == ["next_batch", "next_batch", "update", "next_batch", "update", "next_batch", "update", "update"]
    assert measurer.threads == [False] * 4  # measured off the main thread, while it planned


def test_a_replay_plans_in_turn_unless_asked():
    task, _ = replayed_c12()
    serial = engine.tune(task, get_tuner("xgb", task, seed=2), CountingReplayMeasurer(c12_recording()), 80)
    again = engine.tune(task, get_tuner("xgb", task, seed=2), CountingReplayMeasurer(c12_recording()), 80,
                        overlap=False)
    assert [r.config_index for r in serial.results] == [r.config_index for r in again.results]
