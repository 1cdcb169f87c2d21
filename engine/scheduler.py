"""Which task of a network gets the next round of trials.

A network job shares one trial budget among its tasks, a round (a fixed number of
trials) at a time. Two rules:

- `gradient`, Ansor's task scheduler (Zheng et al., OSDI'20, section 6; TVM's
  `auto_scheduler.TaskScheduler`): the objective is the network's estimated latency
  f = sum of w_i * g_i, g_i being task i's best time so far and w_i how often the task
  occurs in the network. The next round goes to the task whose f is expected to fall
  fastest: w_i * (alpha * backward + (1 - alpha) * forward), where backward is how
  much g_i fell per round over the last `BACKWARD_WINDOW` rounds, and forward an
  optimistic guess of the next round's gain: g_i / rounds_i, or the gap to
  `BETA` x the FLOP rate of the fastest similar task (same template), if smaller.
- `round_robin`: the task given the fewest rounds, in network order.

Both start with one round for every task (nothing is known before), pass over a
task a worker is tuning now (one task at a time per worker, one worker per task),
and over a task whose space has run out. A task without any valid config yet comes
first (its latency is unknown, as good as infinite): TVM starts every best at 1e10 s.
A task that occurs nowhere (weight 0) gets its first round and nothing more from
`gradient`: it cannot lower f.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Sequence

ALPHA = 0.2
BETA = 2.0
BACKWARD_WINDOW = 3


class Strategy(str, Enum):
    GRADIENT = "gradient"
    ROUND_ROBIN = "round_robin"


class UnknownStrategy(ValueError):
    pass


def strategy_named(name: str) -> Strategy:
    try:
        return Strategy(name)
    except ValueError:
        valid = ", ".join(s.value for s in Strategy)
        raise UnknownStrategy(f"unknown allocation {name!r}; valid allocations: {valid}") from None


@dataclass(frozen=True)
class TaskView:
    """What the scheduler knows of one task."""

    weight: float                      # occurrences in the network
    flops: float                       # per run of the task
    bests: tuple[float | None, ...]    # best seconds after each finished round; None: no valid config yet
    group: str = ""                    # similar tasks (one template) bound each other's forward guess
    busy: bool = False                 # a worker is tuning it now
    finished: bool = False             # its space is exhausted

    @property
    def rounds(self) -> int:
        return len(self.bests)

    @property
    def best(self) -> float | None:
        return self.bests[-1] if self.bests else None


def next_task(tasks: Sequence[TaskView], strategy: Strategy = Strategy.GRADIENT) -> int | None:
    """The index of the task to tune next, or None when every task is busy or finished
    (or, under `gradient`, only tasks of weight 0 are left after their first round)."""
    free = [i for i, task in enumerate(tasks) if not task.busy and not task.finished]
    unstarted = [i for i in free if tasks[i].rounds == 0]
    if unstarted:
        return unstarted[0]
    if strategy == Strategy.ROUND_ROBIN:
        return min(free, key=lambda i: (tasks[i].rounds, i), default=None)
    free = [i for i in free if tasks[i].weight > 0]
    blind = [i for i in free if tasks[i].best is None]
    if blind:
        return min(blind, key=lambda i: (tasks[i].rounds, i))
    return min(free, key=lambda i: (gradient(tasks, i), i), default=None)


def gradient(tasks: Sequence[TaskView], i: int) -> float:
    """d f / d (rounds of task i), an estimate: the more negative, the more a round of i gains."""
    task = tasks[i]
    best = task.best
    if best is None:
        return -math.inf
    backward = 0.0
    window = task.bests[-1 - BACKWARD_WINDOW:] if task.rounds > BACKWARD_WINDOW else ()
    if window and window[0] is not None:
        backward = (best - window[0]) / BACKWARD_WINDOW
    next_guess = best - best / task.rounds
    rates = [t.flops / t.best for t in tasks if t.group == task.group and t.best]
    if len(rates) > 1:
        next_guess = min(next_guess, BETA * task.flops / max(rates))
    forward = next_guess - best
    return task.weight * (ALPHA * backward + (1 - ALPHA) * forward)


def bests_per_round(costs: Sequence[float | None], round_trials: int) -> tuple[float | None, ...]:
    """Best seconds after each round, from a task's measured costs in order (None: failed).
    A round is `round_trials` trials; a last, shorter one counts as a round too."""
    if round_trials < 1:
        raise ValueError("a round needs at least one trial")
    bests: list[float | None] = []
    best = None
    for number, cost in enumerate(costs, start=1):
        if cost is not None and (best is None or cost < best):
            best = cost
        if number % round_trials == 0 or number == len(costs):
            bests.append(best)
    return tuple(bests)
