"""Callbacks of the tuning loop: each is called as `callback(state, configs, results)`
after every measured batch. A callback may raise `StopTuning` to end the run
after that batch (early stopping does; so can a job that was cancelled).
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Callable, Sequence, TextIO

from .measure import MeasureResult, to_record
from .logfile import format_record

if TYPE_CHECKING:  # pragma: no cover
    from .space import ConfigEntity
    from .tune import TuneState

Callback = Callable[["TuneState", Sequence["ConfigEntity"], Sequence[MeasureResult]], None]


class StopTuning(Exception):
    """Raised by a callback to end tuning after the current batch."""


def log_to_file(path: str) -> Callback:
    """Append each measurement to an AutoTVM log (engine.logfile is the only writer)."""

    def append(state, configs, results) -> None:
        append_to_log(path, state.task, state.target, configs, results)

    return append


def append_to_log(path: str, task, target: str, configs, results) -> None:
    """Append measurements of `task`'s configs on `target` to the AutoTVM log at `path`."""
    with open(path, "a", encoding="utf-8") as stream:
        for config, result in zip(configs, results):
            stream.write(format_record(to_record(task, config, result, target)) + "\n")


def progress_printer(stream: TextIO | None = None) -> Callback:
    """One line per batch: trials done, best GFLOPS so far, failures."""

    def show(state, configs, results) -> None:
        out = stream or sys.stderr
        best = state.best_gflops
        if state.best is None:
            best_text = "none yet"
        elif state.task.flops:
            best_text = f"{best:.2f} GFLOPS"
        else:  # no FLOP count (a Kernel Tuner kernel): the time says it
            best_text = f"{state.best.mean_cost * 1e3:.4f} ms"
        out.write(
            f"[{state.task.name}] trials {state.trials}/{state.n_trial}"
            f"  best {best_text}  failures {state.failures}\n"
        )
        out.flush()

    return show


def early_stopping(patience: int) -> Callback:
    """Stop once `patience` trials of this run have passed without a faster config."""
    if patience < 1:
        raise ValueError("early stopping needs a patience of at least one trial")

    def check(state, configs, results) -> None:
        if state.trials - state.best_trial >= patience:
            raise StopTuning(f"no improvement in the last {state.trials - state.best_trial} trials")

    return check
