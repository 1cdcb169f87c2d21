"""Tuners side by side on ten exhaustive recordings: trials to the first config within 95 % of the best.

Every tuner of ours (and the XGBoost tuner warm-started from the other GPUs' records
of the same workload, "xgb+transfer"), every single-objective strategy of Kernel
Tuner 1.5 and Optuna's TPE and CMA-ES (ours, `tpe` and `cmaes`, are Optuna's
samplers behind our interface) are replayed without a GPU on the C12 and broadcast
H200 recordings and the eight Kernel Tuner hub spaces (benchmarks/tuner_spaces.py).

- A trial is one measured config, counted exactly: the position of the first config
  within `--share` of the recording's best among the distinct configs measured, in
  order (our tuners measure in batches of at most 16; a batch's configs count one by one).
- The budget is a fifth of the space (at least 40 trials); a seed that does not get
  there within it fails, and counts as budget + 1 in the median (a median above the
  budget reads "> budget").
- The median's 95 % confidence interval is distribution-free: the order statistics
  n/2 -+ 0.98 sqrt(n) of the n seeds.
- Our tuners see the recorded configs only; a space of at most 20,000 configs is
  scored whole by the XGBoost tuner's optimizer, in production as here (all ten are;
  the full C12 space, 844,800 configs, is walked by simulated annealing instead, and
  what that costs is benchmarks/planning.py's to measure).

    .venv/bin/python benchmarks/tuners.py --out docs/benchmarks/tuners.md      # everything (about 20 min)
    .venv/bin/python benchmarks/tuners.py --spaces c12 broadcast --seeds 20     # a quick look
    .venv/bin/python benchmarks/tuners.py --tuners xgb --seeds 50 --keep docs/benchmarks/tuners.md \
        --out docs/benchmarks/tuners.md                                     # one tuner rerun, the rest kept
    .venv/bin/python benchmarks/tuners.py --keep-only --keep docs/benchmarks/tuners.md /tmp/xgb.md \
        --out docs/benchmarks/tuners.md                                     # merge earlier outputs, run nothing
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import engine  # noqa: E402
from engine.callbacks import StopTuning  # noqa: E402
from engine.replay import ReplayMeasurer  # noqa: E402
from engine.tuners import DEFAULT_TUNER, get_tuner  # noqa: E402

import kt_peers  # noqa: E402
import tuner_spaces  # noqa: E402

OURS = ("random", "ga", "xgb", "tpe", "cmaes")
TRANSFER = ("xgb",)
BATCH_SIZE = 16
# What is cut to keep a run near 20 minutes on two shared cores: seeds (on c12 and broadcast,
# on each hub space) of the tuners that cost seconds a run (0: not run there), and the budget
# of bayes_opt and TPE on the hub spaces (a Gaussian process over 4,362-11,130 configs refitted
# at every evaluation costs about a minute a run for 200 evaluations there; TPE's asks grow
# with its trials). `--seeds` caps every count; `--no-cuts` lifts them.
SEED_CUTS = {"xgb+transfer": (100, 30), "tpe": (20, 2), "cmaes": (20, 3), "kt:bayes_opt": (10, 0),
             **{f"kt:{s}": (20, 20) for s in kt_peers.STRATEGIES if s != "bayes_opt"}}
HUB_BUDGET_CAPS = {"kt:bayes_opt": 200, "tpe": 200}
# One XGBoost thread: the models here are small, and the benchmark runs a process per core.
TUNER_OPTIONS = {"xgb": {"nthread": 1}}
DEFAULT_HUB = tuner_spaces.ROOT.parent / "shared" / "data" / "benchmark_hub"

_spaces: dict[str, tuner_spaces.BenchSpace] = {}
_cache_files: dict[str, Path] = {}


def budget_of(space, tuner: str = "") -> int:
    budget = max(40, round(0.2 * len(space.task.config_space)))
    if space.transfer and tuner in HUB_BUDGET_CAPS:
        budget = min(budget, HUB_BUDGET_CAPS[tuner])
    return budget


def our_trials(space, name: str, seed: int, target: float, budget: int) -> int | None:
    transfer = name.endswith("+transfer")
    base = name.removesuffix("+transfer")
    options = dict(TUNER_OPTIONS.get(base, {}), **({"transfer_from": space.transfer} if transfer else {}))
    tuner = get_tuner(base, space.task, seed=seed, **options)

    def stop_at_target(state, configs, results):
        if state.best is not None and state.best.mean_cost <= target:
            raise StopTuning("target reached")

    result = engine.tune(space.task, tuner, ReplayMeasurer(space.records), budget, callbacks=[stop_at_target],
                         batch_size=BATCH_SIZE)
    for position, record in enumerate(result.results, start=1):
        if record.ok and record.mean_cost <= target:
            return position
    return None


def _load(names: list[str], hub: str | None, cache_dir: str) -> None:
    for space in tuner_spaces.all_spaces(Path(hub) if hub else None):
        if space.name in names:
            _spaces[space.name] = space
            _cache_files[space.name] = Path(cache_dir) / f"{space.name}.json"


def _run(job: tuple[str, str, int, float]) -> tuple[str, str, int, int | None, float]:
    space_name, tuner, seed, share = job
    space = _spaces[space_name]
    target, budget = space.best_cost / share, budget_of(space, tuner)
    started = time.perf_counter()
    if tuner.startswith("kt:"):
        cache = _cache_files[space_name]
        if not cache.exists():
            space.write_kt_cache(cache)
        trials = kt_peers.trials_to_reach(space, cache, tuner[3:], seed, target, budget)
    else:
        trials = our_trials(space, tuner, seed, target, budget)
    return space_name, tuner, seed, trials, time.perf_counter() - started


def median_ci(trials: list[int | None], budget: int) -> tuple[float, float, float, float]:
    """Median, its 95 % CI (order statistics) and the share of failed seeds; failures count as budget + 1."""
    values = np.sort([budget + 1 if t is None else t for t in trials])
    n = len(values)
    lo = max(0, math.floor(n / 2 - 0.98 * math.sqrt(n)) - 1)
    hi = min(n - 1, math.ceil(n / 2 + 0.98 * math.sqrt(n)) - 1)
    return float(np.median(values)), float(values[lo]), float(values[hi]), sum(t is None for t in trials) / n


def fmt(value: float, budget: int) -> str:
    return f"> {budget}" if value > budget else f"{value:g}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hub", default=str(DEFAULT_HUB), help="the benchmark hub folder (Kernel Tuner caches)")
    parser.add_argument("--spaces", nargs="+", help="space names (default: all ten)")
    parser.add_argument("--tuners", nargs="+", help="our tuner names, name+transfer, or kt:<strategy>")
    parser.add_argument("--seeds", type=int, default=100, help="seeds per tuner and space, before the cuts")
    parser.add_argument("--no-cuts", action="store_true", help="every tuner gets --seeds seeds (hours, not minutes)")
    parser.add_argument("--share", type=float, default=0.95)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", help="write the markdown tables here too")
    parser.add_argument("--keep", metavar="TABLES", nargs="+", help="earlier outputs of this script: the rows of "
                        "tuners not run now are taken from them, a later file's row replacing an earlier one's "
                        "(the same seeds replay the same runs while a tuner's code is unchanged)")
    parser.add_argument("--keep-only", action="store_true", help="run nothing: the tables of the --keep files "
                        "merged, over the spaces they hold (or --spaces)")
    options = parser.parse_args(argv)
    if options.keep_only and (not options.keep or options.tuners):
        parser.error("--keep-only merges the --keep files and runs no tuner: give --keep, not --tuners")
    hub = options.hub if Path(options.hub).is_dir() else None
    if hub is None:
        print(f"no benchmark hub at {options.hub}: the eight hub spaces are left out", file=sys.stderr)
    all_names = ["c12", "broadcast"] + ([f"{k}-{g}" for k in tuner_spaces.HUB_KERNELS for g in tuner_spaces.HUB_GPUS]
                                        if hub else [])
    names = options.spaces or all_names
    every = [*OURS, *(f"{t}+transfer" for t in TRANSFER)] + [f"kt:{s}" for s in kt_peers.STRATEGIES]
    tuners = [] if options.keep_only else options.tuners or every
    kept = read_kept(options.keep or (), set(names), set(tuners))
    if options.keep_only:
        names = [n for n in names if any(space == n for space, _ in kept)]
    shown = [t for t in every if t in tuners or any(key[1] == t for key in kept)]
    shown += [t for t in tuners if t not in shown]

    def seeds_of(tuner: str, space: str) -> int:
        if options.no_cuts or tuner not in SEED_CUTS:
            return options.seeds
        ours, hub_space = SEED_CUTS[tuner]
        return min(options.seeds, hub_space if space not in ("c12", "broadcast") else ours)

    with tempfile.TemporaryDirectory() as cache_dir:
        _load(names, hub, cache_dir)
        jobs = [(space, tuner, seed, options.share) for space in names for tuner in tuners
                if not (tuner.endswith("+transfer") and not _spaces[space].transfer)
                for seed in range(seeds_of(tuner, space))]
        results: dict[tuple[str, str], list] = {}
        seconds: dict[tuple[str, str], float] = {}
        started = time.perf_counter()
        with ProcessPoolExecutor(options.jobs, initializer=_load, initargs=(names, hub, cache_dir)) as pool:
            for space, tuner, seed, trials, elapsed in pool.map(_run, jobs, chunksize=4):
                results.setdefault((space, tuner), []).append(trials)
                seconds[(space, tuner)] = seconds.get((space, tuner), 0.0) + elapsed
        wall = time.perf_counter() - started
    report = tables(names, shown, results, seconds, options, wall, kept)
    print(report)
    if options.out:
        Path(options.out).write_text(report, encoding="utf-8")
    return 0


def read_kept(paths, spaces: set[str], running: set[str]) -> dict[tuple[str, str], tuple]:
    """The kept rows of several earlier outputs: a later file's row of a (space, tuner) replaces
    an earlier file's (a rerun with more seeds supersedes the committed table's)."""
    kept = {}
    for path in paths:
        kept.update(read_kept_rows(Path(path), spaces, running))
    return kept


def read_kept_rows(path: Path, spaces: set[str], running: set[str]) -> dict[tuple[str, str], tuple]:
    """(space, tuner) -> (median, lo, hi, failing share, seeds, seconds) from the per-space tables
    of an earlier output, for the tuners not in `running`; "> budget" reads budget + 1."""
    kept, space = {}, None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("### "):
            space = line[4:].split(":")[0]
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if space not in spaces or len(cells) != 5 or not cells[1].isdigit():
            continue
        tuner = cells[0].split(" (budget")[0]
        if tuner in running:
            continue
        median, interval = cells[2].split(" [")
        lo, hi = interval.rstrip("]").split("–")
        value = lambda text: int(text[2:]) + 1 if text.startswith("> ") else float(text)  # noqa: E731
        kept[(space, tuner)] = (value(median), value(lo), value(hi), float(cells[3].rstrip("%")) / 100,
                                int(cells[1]), float(cells[4].split()[0]))
    return kept


def tables(names, tuners, results, seconds, options, wall, kept=None) -> str:
    kept = kept or {}
    lines = []
    summary: dict[tuple[str, str], tuple] = {}
    for space in names:
        bench = _spaces[space]
        budget = budget_of(bench)
        target = bench.best_cost / options.share
        within = sum(r.ok and r.mean_cost <= target for r in bench.records)
        lines += [f"### {space}: {len(bench.task.config_space)} configs, {within} within {options.share:.0%} "
                  f"of the best, budget {budget}", "",
                  "| tuner | seeds | median trials [95 % CI] | seeds failing | seconds |", "|---|---:|---:|---:|---:|"]
        for tuner in tuners:
            trials = results.get((space, tuner))
            own = budget_of(bench, tuner)
            if trials:
                median, lo, hi, failing = summary[(space, tuner)] = median_ci(trials, own)
                count, spent, note = len(trials), seconds[(space, tuner)], ""
            elif (space, tuner) in kept:
                median, lo, hi, failing, count, spent = kept[(space, tuner)]
                summary[(space, tuner)], note = (median, lo, hi, failing), " (kept)"
            else:
                continue
            lines.append(f"| {tuner}{'' if own == budget else f' (budget {own})'} | {count} | "
                         f"{fmt(median, own)} [{fmt(lo, own)}–{fmt(hi, own)}] "
                         f"| {failing:.0%} | {spent:.1f}{note} |")
        lines.append("")
    header = ["## Median trials to 95 % (failing seeds count as budget + 1)", "",
              "| tuner | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for tuner in tuners:
        cells = [fmt(summary[(s, tuner)][0], budget_of(_spaces[s], tuner)) if (s, tuner) in summary else "–" for s in names]
        header.append(f"| {tuner} | " + " | ".join(cells) + " |")
    verdict = ["", f"## The default tuner ({DEFAULT_TUNER}) against the best peer", "",
               "| space | default | best peer | peer's median | default ≤ best peer |", "|---|---:|---|---:|---|"]
    for space in names:
        peers = [t for t in tuners if t.startswith("kt:") or t in ("tpe", "cmaes")]
        peers = [t for t in peers if (space, t) in summary and t != DEFAULT_TUNER]
        if not peers or (space, DEFAULT_TUNER) not in summary:
            continue
        def reached(tuner):  # a median beyond a tuner's budget says only that it was not reached
            median = summary[(space, tuner)][0]
            return median if median <= budget_of(_spaces[space], tuner) else math.inf

        best = min(peers, key=reached)
        ours, theirs = reached(DEFAULT_TUNER), reached(best)
        budget = budget_of(_spaces[space])
        verdict.append(f"| {space} | {fmt(summary[(space, DEFAULT_TUNER)][0], budget)} | {best} | "
                       f"{fmt(summary[(space, best)][0], budget_of(_spaces[space], best))} | "
                       f"{'yes' if ours <= theirs else f'no, {ours / theirs:.2f}× the peer'} |")
    choice = ["", "## Choosing the default: each tuner of ours against the best peer of every space", "",
              "| tuner | spaces at most the best peer's median | geometric mean of its median / the best peer's |",
              "|---|---:|---:|"]
    for tuner in [t for t in tuners if not t.startswith("kt:") and not t.endswith("+transfer")]:
        ratios = []
        for space in names:
            budget = budget_of(_spaces[space], tuner)
            peers = [t for t in tuners if (t.startswith("kt:") or t in ("tpe", "cmaes")) and t != tuner
                     and (space, t) in summary]
            if (space, tuner) not in summary or not peers:
                continue
            best = min(summary[(space, t)][0] if summary[(space, t)][0] <= budget_of(_spaces[space], t) else math.inf
                       for t in peers)
            ratios.append(summary[(space, tuner)][0] / best if best < math.inf else 1.0)
        if ratios:
            wins = sum(r <= 1 for r in ratios)
            choice.append(f"| {tuner} | {wins} of {len(ratios)} | {math.exp(np.mean(np.log(ratios))):.2f} |")
    transfer = ["", "## Transfer: the other three GPUs' records as history", "",
                "| space | cold | with transfer | cold / transfer | 2× goal |", "|---|---:|---:|---:|---|"]
    for space in names:
        for tuner in TRANSFER:
            warm, cold = summary.get((space, f"{tuner}+transfer")), summary.get((space, tuner))
            if not warm or not cold:
                continue
            ratio = cold[0] / warm[0]
            budget = budget_of(_spaces[space])
            transfer.append(f"| {space} ({tuner}) | {fmt(cold[0], budget)} | {fmt(warm[0], budget)} | {ratio:.2f} | "
                            f"{'reached' if ratio >= 2 else f'short by {2 / ratio:.2f}×'} |")
    footer = ["", f"Wall time {wall:.0f} s with {options.jobs} worker processes." if results
              else "Merged from earlier outputs (--keep-only): nothing run."]
    return "\n".join(header + verdict + choice + transfer + ["", "## Per space", ""] + lines + footer) + "\n"


if __name__ == "__main__":
    sys.exit(main())
