"""One line per kernel of an Nsight Compute report's raw page (`ncu --import R --page raw --csv`,
plain or gzipped): time, the SM's and memory's share of their peaks, L1, L2 and DRAM, the tensor
pipe, occupancy, and the stall reasons that cost the most (cycles per issued instruction).

    python3 scripts/device/ncu_summary.py ncu-raw.csv.gz [--names]   (--names: every metric's name)
"""
from __future__ import annotations

import argparse
import csv
import gzip
import re
import sys

def one_decimal(value: float, row: dict, unit: str) -> str:
    return f"{value:.1f}"


def whole(value: float, row: dict, unit: str) -> str:
    return f"{value:,.0f}"  # as ncu writes counts: 3,136


def microseconds(value: float, row: dict, unit: str) -> str:
    return f"{value * MICROSECONDS.get(unit, 1e-3):.2f}"


def millions(value: float, row: dict, unit: str) -> str:
    return f"{value / 1e6:.1f}"


def share_of_elapsed(value: float, row: dict, unit: str) -> str:
    """Active cycles over elapsed ones: an SM without a block counts as idle."""
    elapsed = number(row.get("sm__cycles_elapsed.avg"))
    return f"{100 * value / elapsed:.0f}" if elapsed else ""


def kilobytes(value: float, row: dict, unit: str) -> str:
    return f"{value / (1 if unit.startswith('Kbyte') else 1000):.0f}"  # ncu's Kbyte is 1000 bytes


# (heading, metrics, format): the first of a heading's metrics the report holds, formatted
COLUMNS = [
    ("µs", ["gpu__time_duration.sum"], microseconds),
    ("instructions M", ["smsp__inst_issued.sum"], millions),
    ("SM active %", ["sm__cycles_active.avg"], share_of_elapsed),
    ("tensor % elapsed", ["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"], one_decimal),
    ("tensor % active", ["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"], one_decimal),
    ("issue % active", ["smsp__issue_active.avg.pct_of_peak_sustained_active"], one_decimal),
    ("L1 %", ["l1tex__throughput.avg.pct_of_peak_sustained_active"], one_decimal),
    ("L2 %", ["lts__throughput.avg.pct_of_peak_sustained_elapsed"], one_decimal),
    ("L2 hit %", ["lts__t_sector_hit_rate.pct"], one_decimal),
    ("DRAM %", ["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                "dram__throughput.avg.pct_of_peak_sustained_elapsed"], one_decimal),
    ("warps/SM", ["sm__warps_active.avg.per_cycle_active"], one_decimal),
    ("regs", ["launch__registers_per_thread"], whole),
    ("block", ["launch__block_size"], whole),
    ("grid", ["launch__grid_size"], whole),
    ("cluster", ["launch__cluster_size"], whole),
    ("shared KB", ["launch__shared_mem_per_block"], kilobytes),
]
STALL = re.compile(r"smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio$")


def rows_of(path: str) -> tuple[list[str], dict, list[dict]]:
    """The metric names, their units, and one dict per kernel."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        lines = [line for line in f if not line.startswith("==")]  # ncu's own messages
    table = list(csv.reader(lines))
    if len(table) < 2:  # a failed ncu run leaves no report, so no page
        return [], {}, []
    header = table[0]
    return header, dict(zip(header, table[1])), [dict(zip(header, row)) for row in table[2:]]


def number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except (AttributeError, ValueError):
        return None


MICROSECONDS = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}


def line_of(row: dict, units: dict) -> str:
    cells = [row.get("Kernel Name", "?")[:48]]
    for heading, metrics, format_ in COLUMNS:
        metric = next((m for m in metrics if row.get(m) not in (None, "")), None)
        value = number(row[metric]) if metric else None
        cells.append(f"{heading} {'' if value is None else format_(value, row, units.get(metric, ''))}")
    stalls = sorted(((number(v) or 0.0, STALL.match(k).group(1)) for k, v in row.items() if STALL.match(k)), reverse=True)
    cells.append("stalls " + ", ".join(f"{name} {value:.2f}" for value, name in stalls[:4]))
    return " | ".join(cells)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("csv")
    parser.add_argument("--names", action="store_true")
    options = parser.parse_args()
    header, units, rows = rows_of(options.csv)
    if options.names:
        print("\n".join(header))
        return 0
    for row in rows:
        print(line_of(row, units))
    return 0


if __name__ == "__main__":
    sys.exit(main())
