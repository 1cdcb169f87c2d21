"""engine.scheduler on its own: which task of a network gets the next round."""
import math

import pytest

from engine.scheduler import (
    BACKWARD_WINDOW, Strategy, TaskView, UnknownStrategy, bests_per_round, gradient, next_task, strategy_named,
)


def view(bests, weight=1, flops=1e9, **kw):
    return TaskView(weight=weight, flops=flops, bests=tuple(bests), **kw)


def test_every_task_gets_a_first_round_before_any_gets_a_second():
    tasks = [view([1e-3], weight=100), view([]), view([2e-3]), view([])]
    assert next_task(tasks, Strategy.GRADIENT) == 1
    assert next_task(tasks, Strategy.ROUND_ROBIN) == 1


def test_round_robin_gives_the_task_with_fewest_rounds_in_network_order():
    tasks = [view([1e-3, 1e-3]), view([1e-3]), view([1e-3])]
    assert next_task(tasks, Strategy.ROUND_ROBIN) == 1


def test_busy_and_finished_tasks_are_passed_over():
    tasks = [view([], busy=True), view([1e-3], finished=True), view([5e-3, 4e-3])]
    assert next_task(tasks, Strategy.GRADIENT) == 2
    assert next_task(tasks, Strategy.ROUND_ROBIN) == 2


def test_no_task_is_given_when_all_are_busy_or_finished():
    tasks = [view([1e-3], busy=True), view([1e-3], finished=True)]
    assert next_task(tasks, Strategy.GRADIENT) is None
    assert next_task(tasks, Strategy.ROUND_ROBIN) is None


def test_gradient_prefers_the_task_whose_weighted_latency_is_largest_when_all_else_is_equal():
    # Same history, same FLOPs: the one that occurs four times gains four times as much.
    tasks = [view([2e-5, 2e-5], weight=1), view([2e-5, 2e-5], weight=4), view([2e-5, 2e-5], weight=2)]
    assert next_task(tasks, Strategy.GRADIENT) == 1


def test_gradient_prefers_a_task_still_improving_over_one_that_stalled():
    window = BACKWARD_WINDOW + 1
    falling = view([8e-5 - i * 1e-5 for i in range(window)])   # ends at 5e-5, still falling
    flat = view([5e-5] * window)                                 # same best, no progress
    assert gradient([flat, falling], 1) < gradient([flat, falling], 0)
    assert next_task([flat, falling], Strategy.GRADIENT) == 1


def test_gradient_formula_matches_ansors_for_one_task():
    # w * (alpha * (g_t - g_{t-3}) / 3 + (1 - alpha) * (g - g / rounds - g)), no similar task.
    bests = [10.0, 8.0, 6.0, 5.0]
    expected = 3 * (0.2 * (5.0 - 10.0) / 3 + 0.8 * (-5.0 / 4))
    assert gradient([view(bests, weight=3)], 0) == pytest.approx(expected)


def test_a_similar_task_that_runs_far_faster_bounds_the_forward_guess():
    # Task 0 runs 1 GFLOP in 1 ms (1 TFLOP/s); task 1 of the same template reaches 100 TFLOP/s.
    # The optimistic guess for task 0 is then BETA * flops / best rate, not g - g/rounds.
    slow = view([1e-3] * 4, flops=1e9, group="conv")
    fast = view([1e-5], flops=1e9, group="conv")
    other = view([1e-5], flops=1e9, group="gemm")
    bounded = gradient([slow, fast], 0)
    alone = gradient([slow, other], 0)
    assert bounded == pytest.approx(0.8 * (2 * 1e9 / 1e14 - 1e-3))
    assert alone == pytest.approx(0.8 * (-1e-3 / 4))
    assert bounded < alone


def test_a_task_without_a_valid_config_comes_first_among_started_tasks():
    tasks = [view([1e-3], weight=50), view([None], weight=1)]
    assert gradient(tasks, 1) == -math.inf
    assert next_task(tasks, Strategy.GRADIENT) == 1


def test_a_task_of_weight_zero_gets_only_its_first_round_from_gradient():
    tasks = [view([], weight=0), view([1e-3], weight=1, busy=True)]
    assert next_task(tasks, Strategy.GRADIENT) == 0
    started = [view([1e-3], weight=0), view([1e-3], weight=1, busy=True)]
    assert next_task(started, Strategy.GRADIENT) is None
    assert next_task(started, Strategy.ROUND_ROBIN) == 0


def test_bests_per_round_reads_the_best_after_each_round_and_a_short_last_round():
    costs = [5.0, None, 4.0, 6.0, None, 3.0, 7.0]
    assert bests_per_round(costs, 2) == (5.0, 4.0, 3.0, 3.0)
    assert bests_per_round([None, None], 2) == (None,)
    assert bests_per_round([], 4) == ()
    with pytest.raises(ValueError):
        bests_per_round(costs, 0)


def test_a_whole_budget_spent_by_the_scheduler_favours_the_heavy_slow_task():
    # Simulated tasks: each round lowers the best by 10 %; task 1 is slow and occurs 3 times.
    start = {0: 1e-5, 1: 1e-4, 2: 2e-5}
    weights = {0: 1, 1: 3, 2: 1}
    bests = {i: [] for i in start}
    for _ in range(30):
        tasks = [view(bests[i], weight=weights[i]) for i in start]
        chosen = next_task(tasks, Strategy.GRADIENT)
        previous = bests[chosen][-1] if bests[chosen] else start[chosen] / 0.9
        bests[chosen].append(previous * 0.9)
    rounds = {i: len(b) for i, b in bests.items()}
    assert sum(rounds.values()) == 30 and min(rounds.values()) >= 1
    assert rounds[1] > rounds[2] > rounds[0]


def test_strategies_are_named_and_an_unknown_name_lists_the_valid_ones():
    assert strategy_named("round_robin") is Strategy.ROUND_ROBIN
    with pytest.raises(UnknownStrategy, match="gradient, round_robin"):
        strategy_named("greedy")
