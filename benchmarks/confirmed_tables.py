"""The docs' confirmed tables from a `verify_bests.py --json` run, and its agreement with another.

    python benchmarks/confirmed_tables.py RUN.json [--compare OTHER.json] [--leaderboard] [--write-docs]

Prints (and with --write-docs writes into docs/benchmarks/conv2d-h200.md and
operators-h200.md, between `<!-- confirmed:begin -->` and `<!-- confirmed:end -->` at the
top, the rest of each page kept as history) tables of the re-measured figures: ours
against the vendor library, warm and cold, each speedup with its interval and the number
of interleaved rounds, and every claimed goal marked as holding or not.

--vendor-runs MORE.json...: other fresh processes' runs of the same bests; each workload's
vendor side is then the fastest process's (warm median). cuDNN's exhaustive search does not
pick the same algorithm in every process (C11 on the H200 at 565fe43: 8.55 µs in one
process, 13.88 µs in the next), so one process's vendor time may be far from the library's best.

--compare OTHER.json: each best's warm median in RUN against OTHER's (another fresh
process): the largest deviation, and every workload beyond 3 %. With --leaderboard, RUN's
side is read from a leaderboard: RUN is imported (`records.confirmations`) into a scratch
SQLite database and each best's confirmed median is the leaderboard's (`records.standings`).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

AGREEMENT = 0.03
DESIGN_COPY_BANDWIDTH = 4.16e12  # bytes/s read + written: DESIGN.md's H200 copy
BEGIN, END = "<!-- confirmed:begin -->", "<!-- confirmed:end -->"
# Goals the operators page claimed: (text, test of vendor time / our time).
GEMM_GOALS = {"G1": ("≥ 0.90 of cuBLAS", lambda r: r >= 0.90), "G2": ("≥ 0.90 of cuBLAS", lambda r: r >= 0.90),
              "G4": ("faster than cuBLAS", lambda r: r > 1.0), "G5": ("faster than cuBLAS", lambda r: r > 1.0)}
BROADCAST_GOAL = 0.85  # of DESIGN_COPY_BANDWIDTH


def us(seconds) -> str:
    return "—" if seconds is None else f"{seconds * 1e6:.2f}"


def spread_text(spread) -> str:
    if not spread:
        return "—"
    return f"{us(spread['median'])} ({us(spread['min'])}–{us(spread['max'])})"


def ratio(vendor, ours) -> tuple[float, float, float] | None:
    """vendor / ours: of the medians, and the interval from the rounds' extremes."""
    if not vendor or not ours or min(vendor["min"], ours["min"]) <= 0:
        return None
    return vendor["median"] / ours["median"], vendor["min"] / ours["max"], vendor["max"] / ours["min"]


def ratio_text(value) -> str:
    return "—" if value is None else f"{value[0]:.2f}× ({value[1]:.2f}–{value[2]:.2f})"


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def side(row: dict, who: str, cache: str):
    return (row.get(who) or {}).get(cache)


def keep_fastest_vendor(run: dict, others: list[dict]) -> None:
    """Each row's vendor side replaced by the fastest (warm median) of the processes that timed
    the same library build (engine.same_vendor_library); `vendor_processes` counts them."""
    from engine import same_vendor_library

    by_name = [{r["workload"]: r for r in other["rows"]} for other in others]
    for row in run["rows"]:
        own = row.get("vendor")
        if not (own and own.get("warm")):
            continue
        timed = [own] + [v for v in (o.get(row["workload"], {}).get("vendor") for o in by_name)
                         if v and v.get("warm") and same_vendor_library(v.get("details", {}), own.get("details", {}))]
        row["vendor"] = min(timed, key=lambda v: v["warm"]["median"])
        row["vendor_processes"] = len(timed)
    counts = [row["vendor_processes"] for row in run["rows"] if "vendor_processes" in row]
    run["meta"]["vendor_processes"] = (min(counts), max(counts)) if counts else (1, 1)


def header(run: dict, what: str) -> list[str]:
    meta = run["meta"]
    env = meta.get("environment", {})
    fewest, most = meta.get("vendor_processes", (1, 1))
    algorithm_note = ("cuDNN by an exhaustive algorithm search (PyTorch `cudnn.benchmark` with `benchmark_limit = 0`), "
                      "cuBLAS by the faster of PyTorch's back ends; the algorithm each ran is in the run's JSON")
    if most > 1:
        count = f"{most}" if fewest == most else f"{fewest}–{most}"
        algorithm_note += (f"; each vendor figure is the fastest of the {count} fresh processes that timed it (this "
                           f"run's and {', '.join(meta.get('vendor_runs', []))}, with the same library build), as "
                           "cuDNN's search does not pick the same algorithm in every process")
    return [
        BEGIN,
        f"## Confirmed figures: {what}",
        "",
        f"Re-measured {meta['date']} at commit `{meta['commit']}` by `{meta['command']}`: the committed bests, in one "
        f"measuring process started for the run, in {meta['rounds']} interleaved rounds of (ours, vendor, untuned "
        "default), each warm (inputs in L2, CUDA graph of back-to-back launches) and cold (L2 flushed before each "
        f"launch). Vendor: {algorithm_note}; fp32 with TF32 off. GPU {env.get('gpu_name', '?')} "
        f"({env.get('gpu_uuid', '?')}), driver {env.get('driver', '?')}, CUDA runtime {env.get('cuda_runtime', '?')}, "
        f"NVRTC {env.get('nvrtc', '?')}, CuPy {env.get('cupy', '?')}, SM clock {env.get('sm_clock_mhz', '?')} MHz at the "
        "start. Times are medians of the rounds (min–max); a speedup is vendor median / our median with the interval "
        "from the rounds' extremes. Figures below this section are tuning-time measurements, kept as history.",
        "",
    ]


def conv2d_section(run: dict, claimed: dict[str, float]) -> list[str]:
    rows = [r for r in run["rows"] if re.fullmatch(r"C\d+", r["workload"])]
    lines = header(run, "ResNet-18 C1–C12 against cuDNN")
    lines += ["| layer | logged µs | ours warm µs | ours cold µs | cuDNN warm µs | cuDNN cold µs | speedup warm |"
              " speedup cold | claimed | holds |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    warm_all, cold_all = [], []
    for r in rows:
        warm = ratio(side(r, "vendor", "warm"), side(r, "ours", "warm"))
        cold = ratio(side(r, "vendor", "cold"), side(r, "ours", "cold"))
        warm_all += [warm[0]] if warm else []
        cold_all += [cold[0]] if cold else []
        claim = claimed.get(r["workload"])
        holds = "—" if claim is None or warm is None else (
            "yes" if (warm[0] > 1) == (claim > 1) else f"no: claimed {claim:.2f}×, now {warm[0]:.2f}×")
        lines.append(
            f"| {r['workload']} | {r['logged_us']:.2f} | {spread_text(side(r, 'ours', 'warm'))} |"
            f" {spread_text(side(r, 'ours', 'cold'))} | {spread_text(side(r, 'vendor', 'warm'))} |"
            f" {spread_text(side(r, 'vendor', 'cold'))} | {ratio_text(warm)} | {ratio_text(cold)} |"
            f" {'—' if claim is None else f'{claim:.2f}×'} | {holds} |")
    if warm_all:
        lines += ["", f"Geometric mean speedup over cuDNN: {geomean(warm_all):.2f}× warm, "
                      f"{geomean(cold_all):.2f}× cold ({len(warm_all)} layers, {run['meta']['rounds']} rounds each)."]
    return lines + ["", END]


def bandwidth(row: dict) -> float | None:
    import engine

    ours = side(row, "ours", "warm")
    if not ours:
        return None
    task = engine.create_task(row["task_name"], row["args"])
    moved = task.template.bytes_moved(task.params)
    return moved / ours["median"] if moved else None


def operators_section(run: dict) -> list[str]:
    lines = header(run, "operators against cuBLAS, cuDNN and the copy")
    by_name = {r["workload"]: r for r in run["rows"]}
    lines += ["### GEMM fp32 against cuBLAS", "",
              "| workload | logged µs | ours warm µs | cuBLAS warm µs | cuBLAS / ours warm | cold | goal | holds |",
              "|---|---:|---:|---:|---:|---:|---|---|"]
    for name in ("G1", "G2", "G3", "G4", "G5"):
        r = by_name.get(name)
        if r is None:
            continue
        warm = ratio(side(r, "vendor", "warm"), side(r, "ours", "warm"))
        cold = ratio(side(r, "vendor", "cold"), side(r, "ours", "cold"))
        goal, test = GEMM_GOALS.get(name, ("", None))
        holds = "—" if test is None or warm is None else ("yes" if test(warm[0]) else "**no longer holds**")
        lines.append(f"| {name} | {r['logged_us']:.2f} | {spread_text(side(r, 'ours', 'warm'))} |"
                     f" {spread_text(side(r, 'vendor', 'warm'))} | {ratio_text(warm)} | {ratio_text(cold)} |"
                     f" {goal or '—'} | {holds} |")
    lines += ["", "### Depthwise conv2d (MobileNet) against cuDNN", "",
              "| layer | logged µs | ours warm µs | cuDNN warm µs | speedup warm | speedup cold |", "|---|---:|---:|---:|---:|---:|"]
    depthwise = []
    for name in (f"D{i}" for i in range(1, 10)):
        r = by_name.get(name)
        if r is None:
            continue
        warm = ratio(side(r, "vendor", "warm"), side(r, "ours", "warm"))
        depthwise += [warm[0]] if warm else []
        lines.append(f"| {name} | {r['logged_us']:.2f} | {spread_text(side(r, 'ours', 'warm'))} |"
                     f" {spread_text(side(r, 'vendor', 'warm'))} | {ratio_text(warm)} |"
                     f" {ratio_text(ratio(side(r, 'vendor', 'cold'), side(r, 'ours', 'cold')))} |")
    if depthwise:
        lines += ["", f"Geometric mean over D1–D9: {geomean(depthwise):.2f}× warm."]
    lines += ["", f"### NCHW broadcast: bandwidth against DESIGN.md's {DESIGN_COPY_BANDWIDTH / 1e12:.2f} TB/s copy "
                  f"(goal ≥ {BROADCAST_GOAL:.0%})", "",
              "| workload | logged µs | ours warm µs | TB/s | of the copy | goal holds | default warm µs |",
              "|---|---:|---:|---:|---:|---|---:|"]
    for r in run["rows"]:
        if not r["workload"].startswith("B-"):
            continue
        bytes_per_s = bandwidth(r)
        share = bytes_per_s / DESIGN_COPY_BANDWIDTH if bytes_per_s else None
        holds = "—" if share is None else ("yes" if share >= BROADCAST_GOAL else "**no**")
        lines.append(f"| {r['workload']} | {r['logged_us']:.2f} | {spread_text(side(r, 'ours', 'warm'))} |"
                     f" {'—' if bytes_per_s is None else f'{bytes_per_s / 1e12:.2f}'} |"
                     f" {'—' if share is None else f'{share:.0%}'} | {holds} | {spread_text(side(r, 'default', 'warm'))} |")
    others = [r for r in run["rows"] if r["task_name"] == "custom"]
    if others:
        lines += ["", "### Custom kernels against their untuned default", "",
                  "| kernel | logged µs | ours warm µs | default warm µs | default / ours |", "|---|---:|---:|---:|---:|"]
        for r in others:
            lines.append(f"| {r['workload']} | {r['logged_us']:.2f} | {spread_text(side(r, 'ours', 'warm'))} |"
                         f" {spread_text(side(r, 'default', 'warm'))} |"
                         f" {ratio_text(ratio(side(r, 'default', 'warm'), side(r, 'ours', 'warm')))} |")
    return lines + ["", END]


def scratch_django() -> None:
    """Django on a scratch SQLite database, migrated: a leaderboard of its own."""
    scratch = tempfile.mkdtemp(prefix="tunerweb-confirmed-")
    os.environ["DATABASE_URL"] = f"sqlite:///{scratch}/leaderboard.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tunerweb.settings")
    os.environ.setdefault("TUNERWEB_VAR_DIR", scratch)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def leaderboard_medians(run_path: Path) -> dict[str, float]:
    """RUN imported as confirmations: each workload's best confirmed median, as its leaderboard shows it."""
    from engine.logfile import canonical_args
    from records.confirmations import import_confirmations
    from records.models import Workload
    from records.standings import leaderboard

    import_confirmations(run_path.read_text(encoding="utf-8"), run_path.name)
    run = json.loads(run_path.read_text(encoding="utf-8"))
    medians = {}
    for row, confirmation in zip(run["rows"], run["confirmations"]):
        workload = Workload.objects.get(task_name=confirmation["task_name"], args_json=canonical_args(confirmation["args"]))
        bests = leaderboard(workload, show_changed=True).bests
        if bests and bests[0].confirmed:
            medians[row["workload"]] = bests[0].median_cost
    return medians


def agreement(reference: dict[str, float], other: dict) -> list[str]:
    lines = ["| workload | leaderboard median µs | re-measured median µs | deviation |", "|---|---:|---:|---:|"]
    worst = 0.0
    outside = []
    for row in other["rows"]:
        name, ours = row["workload"], side(row, "ours", "warm")
        if name not in reference or not ours:
            continue
        deviation = ours["median"] / reference[name] - 1
        worst = max(worst, abs(deviation))
        if abs(deviation) > AGREEMENT:
            outside.append(name)
        lines.append(f"| {name} | {us(reference[name])} | {us(ours['median'])} | {deviation:+.1%} |")
    lines += ["", f"Largest deviation {worst:.1%}; beyond {AGREEMENT:.0%}: {', '.join(outside) or 'none'}."]
    return lines


def replace_block(path: Path, block: list[str]) -> None:
    text = path.read_text(encoding="utf-8")
    new = "\n".join(block)
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + new + text[text.index(END) + len(END):]
    else:  # after the page's title
        title, _, rest = text.partition("\n")
        text = f"{title}\n\n{new}\n{rest}"
    path.write_text(text, encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--compare", type=Path, help="another verify_bests run to hold RUN's medians against")
    parser.add_argument("--leaderboard", action="store_true", help="read RUN's medians from a leaderboard")
    parser.add_argument("--vendor-runs", type=Path, nargs="*", default=[],
                        help="more fresh processes' runs: each vendor figure is the fastest process's")
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--docs", type=Path, default=ROOT / "docs" / "benchmarks")
    options = parser.parse_args(argv)
    run = json.loads(options.run.read_text(encoding="utf-8"))
    for row, confirmation in zip(run["rows"], run["confirmations"]):
        row.setdefault("args", confirmation["args"])
    if options.vendor_runs:
        run["meta"]["vendor_runs"] = [path.name for path in options.vendor_runs]
        keep_fastest_vendor(run, [json.loads(path.read_text(encoding="utf-8")) for path in options.vendor_runs])
    summary = options.docs / "conv2d-h200-logs" / "summary.json"
    claimed = {}
    if summary.exists():
        claimed = {r["layer"]: r["speedup_vs_cudnn"] for r in json.loads(summary.read_text())["rows"]
                   if r.get("speedup_vs_cudnn")}
    conv2d, operators = conv2d_section(run, claimed), operators_section(run)
    print("\n".join(conv2d[1:-1]) + "\n\n" + "\n".join(operators[1:-1]))
    status = 0
    if options.compare:
        other = json.loads(options.compare.read_text(encoding="utf-8"))
        if options.leaderboard:
            scratch_django()
            reference = leaderboard_medians(options.run)
        else:
            reference = {r["workload"]: side(r, "ours", "warm")["median"] for r in run["rows"] if side(r, "ours", "warm")}
        lines = agreement(reference, other)
        print("\n## Agreement" + (" with the leaderboard's confirmed medians" if options.leaderboard else "") + "\n")
        print("\n".join(lines))
        status = 0 if lines[-1].endswith("none.") else 1
    if options.write_docs:
        replace_block(options.docs / "conv2d-h200.md", conv2d)
        replace_block(options.docs / "operators-h200.md", operators)
    return status


if __name__ == "__main__":
    sys.exit(main())
