"""Re-time the bests of AutoTVM logs by the confirmation protocol, in a fresh measuring process.

    python benchmarks/verify_bests.py LOG... [--top-k 1] [--rounds 5] [--only C1,G2] [--json OUT.json]

For each workload's best in the logs (AutoTVM's rule: lowest mean among error-free
records, this GPU model's where the logs have it), one measuring process started for this
run times the best config (or the top-k distinct ones), the vendor baseline (cuDNN by an
exhaustive algorithm search, cuBLAS by its faster back end; TF32 off; the algorithm is
recorded) and the untuned default config in interleaved rounds A B C A B C ..., each warm
(inputs in L2, a CUDA graph of back-to-back launches) and cold (L2 flushed before each
launch). Prints logged against re-measured time and the vendor ratio, warm and cold; the
JSON holds every round, the environment and the commit (`manage.py import_confirmations`
stores it as confirmations; `benchmarks/confirmed_tables.py` turns it into the docs' tables).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
os.environ.setdefault("CUPY_TF32", "0")

import engine  # noqa: E402
from provenance import git_describe  # noqa: E402
from engine.confirm import MIN_ROUNDS, Role, Spread, confirm_contenders, contenders_for, top_k_distinct  # noqa: E402
from engine.logfile import canonical_args, pick_best, read_log_file  # noqa: E402
from engine.workloads import PRESETS  # noqa: E402

WORKLOAD_NAMES = {(p.task_name, canonical_args(p.args)): name for name, p in PRESETS.items()}


def unnamed(record) -> str:
    """A workload no preset names: its task, and its kernel's name for a custom kernel."""
    spec = record.args[0] if record.args and isinstance(record.args[0], dict) else {}
    return f"{record.task_name} {spec.get('kernel_name', '')}".strip() if spec else f"{record.task_name} {record.args}"


def committed_logs() -> list[str]:
    """Every committed H200 log of bests (what scripts/device/checks.sh verifies), from the repository root."""
    import glob

    return sorted(glob.glob("docs/benchmarks/conv2d-h200-logs/*.log.gz")
                  + glob.glob("docs/benchmarks/operators-h200-logs/**/*.log.gz", recursive=True))


def bests_of(paths: list[str], model: str, top_k: int) -> list[tuple[str, list]]:
    """(name, the workload's top-k records) per workload of the logs, this model's where it has some."""
    records = [record for path in paths for record in read_log_file(path).records]
    by_workload: dict[tuple, list] = {}
    for record in records:
        by_workload.setdefault(record.workload_key, []).append(record)
    chosen = []
    for key, mine in by_workload.items():
        on_model = [r for r in mine if r.model == model] or mine
        if not any(r.ok for r in on_model):
            continue
        if top_k == 1:  # exactly what AutoTVM's rule picks (a tie keeps the earlier)
            best = list(pick_best(on_model).values())
            picked = [min(best, key=lambda r: r.mean_cost)]
        else:
            picked = top_k_distinct(on_model, top_k)
        chosen.append((WORKLOAD_NAMES.get(key) or unnamed(on_model[0]), picked))
    order = {name: i for i, name in enumerate(PRESETS)}
    return sorted(chosen, key=lambda item: (order.get(item[0], len(order)), item[0]))


def row_of(name: str, logged: list, confirmation) -> dict:
    """The figures one workload gives: ours (the first tuned contender), vendor, default."""
    def spread(values):
        found = Spread.of(values)
        return dataclasses.asdict(found) if found else None

    row = {"workload": name, "task_name": confirmation.task_name, "logged_us": logged[0].mean_cost * 1e6,
           "logged_code_hash": logged[0].code_hash, "config_index": logged[0].config_index}
    for timing in confirmation.timings:
        role = timing.contender.role
        key = {Role.TUNED: "ours", Role.VENDOR: "vendor", Role.DEFAULT: "default"}[role]
        if key in row:  # later tuned contenders (top-k > 1) are in the JSON, not the row
            continue
        row[key] = {"warm": spread(timing.warm), "cold": spread(timing.cold), "error": timing.error,
                    "details": timing.details, "provider": timing.contender.provider}
    ours, vendor = row.get("ours"), row.get("vendor")
    if ours and vendor and ours["warm"] and vendor["warm"]:
        row["vendor_ratio_warm"] = vendor["warm"]["median"] / ours["warm"]["median"]
        row["vendor_ratio_cold"] = vendor["cold"]["median"] / ours["cold"]["median"]
    if ours and ours["warm"]:
        row["remeasured_over_logged"] = ours["warm"]["median"] / logged[0].mean_cost
    return row


def fmt(value, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def table(rows: list[dict]) -> str:
    lines = ["| workload | logged µs | warm µs (min–max) | cold µs | re-measured / logged | vendor warm µs | vendor cold µs |"
             " vendor / ours warm | vendor / ours cold |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ours, vendor = r.get("ours") or {}, r.get("vendor") or {}
        warm, cold = ours.get("warm"), ours.get("cold")
        vwarm, vcold = vendor.get("warm"), vendor.get("cold")
        lines.append(
            f"| {r['workload']} | {r['logged_us']:.2f} | "
            + (f"{warm['median'] * 1e6:.2f} ({warm['min'] * 1e6:.2f}–{warm['max'] * 1e6:.2f})" if warm else
               f"error: {ours.get('error', '')[:40]}")
            + f" | {fmt(cold and cold['median'] * 1e6, '.2f')} | {fmt(r.get('remeasured_over_logged'), '.3f')}"
            f" | {fmt(vwarm and vwarm['median'] * 1e6, '.2f')} | {fmt(vcold and vcold['median'] * 1e6, '.2f')}"
            f" | {fmt(r.get('vendor_ratio_warm'), '.2f')} | {fmt(r.get('vendor_ratio_cold'), '.2f')} |"
        )
    return "\n".join(lines)


def meta_of(started: float, options, argv, confirmations: list) -> dict:
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "commit": git_describe(),
        "command": "python " + " ".join([os.path.relpath(__file__)] + (argv or sys.argv[1:])),
        "rounds": options.rounds, "top_k": options.top_k, "wall_s": time.time() - started,
        "environment": confirmations[0]["environment"] if confirmations else {},
    }


def write_json(path: str, meta: dict, rows: list, failed: list, confirmations: list) -> None:
    """The whole run so far (rewritten after every workload: a run cut short keeps what it measured)."""
    if not path:
        return
    with open(path + ".tmp", "w") as stream:
        json.dump({"meta": meta, "rows": rows, "failed": failed, "confirmations": confirmations}, stream, indent=1)
    os.replace(path + ".tmp", path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+", metavar="LOG")
    parser.add_argument("--top-k", type=int, default=1, help="distinct configs per workload (default: the best)")
    parser.add_argument("--rounds", type=int, default=MIN_ROUNDS)
    parser.add_argument("--only", default="", help="comma-separated workload names (C1, D3, G2, ...)")
    parser.add_argument("--json", default="", help="write every round, the environment and the commit here")
    parser.add_argument("--budget-s", type=float, default=None, help="start no new workload after this many seconds")
    parser.add_argument("--device", type=int, default=0)
    options = parser.parse_args(argv)
    if options.rounds < MIN_ROUNDS:
        parser.error(f"--rounds must be at least {MIN_ROUNDS}")

    from engine.gpu.confirming import FreshProcessStopwatch, StopwatchDied  # needs CuPy and a GPU

    started = time.time()
    stopwatch = FreshProcessStopwatch(options.device)
    model = stopwatch.target.split("-model=")[1]
    only = {name for name in options.only.split(",") if name}
    rows, confirmations, failed = [], [], []
    try:
        for name, logged in bests_of(options.logs, model, options.top_k):
            if only and name not in only:
                continue
            if options.budget_s is not None and time.time() - started > options.budget_s:
                print(f"budget spent: {name} and later workloads not started", flush=True)
                break
            first = logged[0]
            task = engine.create_task(first.task_name, first.args)
            contenders = contenders_for(task, [(r.config_index, r.entity) for r in logged])
            try:
                confirmation = confirm_contenders(task, contenders, stopwatch, options.rounds)
            except StopwatchDied as exc:  # a kernel that poisons its context: say so, go on in a new process
                print(f"{name}: {exc}", flush=True)
                failed.append({"workload": name, "error": str(exc)})
                stopwatch.close()
                stopwatch = FreshProcessStopwatch(options.device)
                continue
            confirmations.append(confirmation.to_dict())
            rows.append(row_of(name, logged, confirmation))
            print(json.dumps({k: v for k, v in rows[-1].items() if k not in ("ours", "vendor", "default")}), flush=True)
            write_json(options.json, meta_of(started, options, argv, confirmations), rows, failed, confirmations)
    finally:
        stopwatch.close()
    meta = meta_of(started, options, argv, confirmations)
    write_json(options.json, meta, rows, failed, confirmations)
    print(f"\n{meta['date']}, commit {meta['commit']}, {options.rounds} interleaved rounds, {meta['wall_s']:.0f} s")
    print(table(rows))
    for failure in failed:
        print(f"not measured: {failure['workload']}: {failure['error']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
