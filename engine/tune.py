"""The tuning loop: propose a batch, measure it, learn, call back, repeat; on a GPU the next
batch is proposed while the current one is measured.

History comes in, measurements go out through callbacks, as in AutoTVM: `history`
holds earlier records (a log's, or a job run's stored ones); those of the same task
and GPU model count against the trial budget, are not measured again, and are given
to the tuner (`load_history`) to learn from. Nothing is written here: a callback
stores each batch (`engine.callbacks.log_to_file`, a job run's recorder), so each
measurement is stored once, where its caller keeps records. Re-running a killed run
with its history finishes it; re-running a finished one measures nothing.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Sequence

from .callbacks import Callback, StopTuning
from .logfile import Record, is_faster, target_model
from .measure import Measurer, to_record

if TYPE_CHECKING:  # pragma: no cover
    from .task import Task
    from .tuners import Tuner

DEFAULT_BATCH_SIZE = 16


@dataclass
class TuneState:
    """What callbacks see after each batch."""

    task: "Task"
    tuner: "Tuner"
    target: str
    n_trial: int
    resumed: int = 0          # configs taken from the history, counted in `trials`
    trials: int = 0           # configs measured so far, resumed ones included
    failures: int = 0         # failed measurements of this run
    best: Record | None = None
    best_trial: int = 0       # value of `trials` when `best` was found
    records: list[Record] = field(default_factory=list)  # this run's, in order

    @property
    def best_gflops(self) -> float | None:
        if self.best is None:
            return None
        return self.task.flops / self.best.mean_cost / 1e9

    def add(self, records: Sequence[Record]) -> None:
        for record in records:
            self.trials += 1
            self.records.append(record)
            if not record.ok:
                self.failures += 1
            if is_faster(record, self.best):
                self.best, self.best_trial = record, self.trials


@dataclass(frozen=True)
class TuneResult:
    best: Record | None       # fastest of the history and this run
    trials: int               # measured in this run
    results: list[Record]     # this run's measurements, in order
    resumed: int = 0
    stopped_early: bool = False


def tune(
    task: "Task",
    tuner: "Tuner",
    measurer: Measurer,
    n_trial: int,
    *,
    history: Iterable[Record] = (),
    callbacks: Sequence[Callback] = (),
    batch_size: int = DEFAULT_BATCH_SIZE,
    overlap: bool | None = None,
) -> TuneResult:
    """Tune `task` for `n_trial` configs in all (history included); see the module docstring.

    `overlap`: propose the next batch while the current one is measured (the default for a
    GPU); a replay answers at once, so it plans in turn unless asked (its runs then match
    the benchmarks', which learn from every batch before the next)."""
    if n_trial < 0 or batch_size < 1:
        raise ValueError("tune needs n_trial >= 0 and batch_size >= 1")
    state = TuneState(task=task, tuner=tuner, target=measurer.device.target, n_trial=n_trial)
    _resume(state, history)

    stopped = False
    overlap = not measurer.device.is_replay if overlap is None else overlap
    with ThreadPoolExecutor(1, thread_name_prefix="measure") if overlap else nullcontext() as pool:
        proposed = state.trials

        def ask() -> list:
            # The tuner may ask for a smaller batch than allowed (a model-based one does early,
            # so that its first models act after a few trials rather than a whole batch).
            return tuner.next_batch(tuner.batch_size(min(batch_size, n_trial - proposed)))

        configs = ask() if proposed < n_trial else []
        proposed += len(configs)
        while configs:
            pending = pool.submit(measurer.measure, task, configs) if pool else None
            # While the GPU measures this batch the tuner proposes the next one, from what it
            # has learned up to the last batch: the GPU never waits on planning.
            upcoming = ask() if pool and proposed < n_trial and tuner.has_next() else None
            results = pending.result() if pending else measurer.measure(task, configs)
            if len(results) != len(configs):
                raise RuntimeError(f"measurer returned {len(results)} results for {len(configs)} configs")
            tuner.update(configs, results)
            state.add([to_record(task, c, r, state.target) for c, r in zip(configs, results)])
            try:
                for callback in callbacks:
                    callback(state, configs, results)
            except StopTuning:
                stopped = True
                break
            if upcoming is None:
                upcoming = ask() if proposed < n_trial and tuner.has_next() else []
            configs = upcoming
            proposed += len(configs)
    return TuneResult(
        best=state.best,
        trials=len(state.records),
        results=state.records,
        resumed=state.resumed,
        stopped_early=stopped,
    )


def _resume(state: TuneState, history: Iterable[Record]) -> None:
    """Take this task's earlier measurements on the same GPU model from the history."""
    model = target_model(state.target)
    mine = [r for r in history if r.workload_key == state.task.workload_key and r.model == model]
    if not mine:
        return
    state.tuner.load_history(mine)
    for record in mine:
        if is_faster(record, state.best):
            state.best = record
    state.resumed = len({r.config_index for r in mine})
    state.trials = state.best_trial = state.resumed
