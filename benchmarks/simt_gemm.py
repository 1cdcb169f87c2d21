"""The fp32 SIMT GEMM (engine.ops.gemm) on this GPU: its TMA loader beside the threads' loaders, against cuBLAS.

    python benchmarks/simt_gemm.py check   --json OUT.json [--budget-s 40] [--multicast]
    python benchmarks/simt_gemm.py tune    --json OUT.json --log OUT.log [--budget-s 120] [--shapes G1,G2] [--multicast]
    python benchmarks/simt_gemm.py confirm --json OUT.json [--budget-s 90] [--top 3] [--rounds 5]
    python benchmarks/simt_gemm.py table   --json OUT.json   # the confirmed table again, from the JSON
    python benchmarks/simt_gemm.py configs [--multicast]    # every (workload, config) check and tune time

* check: the TMA loader's tiles on small shapes with tails (M, N, K not multiples of any tile),
  through the GPU measurer and its float64 reference; a failing config is reported.
* tune: issue 18's step-1 workloads (G1 4096³, G2 8192³, G3 1024³, and G5 128×3136×576, the
  skinny shape the loader takes: G4's N = 49 is no multiple of 4), each a fixed list: TMA tiles
  (`TMA_TILES`: block and warp tiles, register tiles, lanes, stages) and, to hold them against,
  the threads' loaders' confirmed bests (`THREADS_BESTS`), all records to an AutoTVM log.
* --multicast (check, tune, configs): the lists are `MULTICAST_TILES` instead, each tile at multicast 1, 2 and 4
  (A's box shared by a cluster of tile columns; 1 is the plain kernel each cluster is held against).
* confirm: each workload's fastest config (`--top K`: the pick among its K fastest by the worse of
  the warm and cold ratios; benchmarks/phases.py) re-timed by the confirmation protocol (a fresh
  measuring process, interleaved with cuBLAS, TF32 off, and the default config, warm and cold,
  5 rounds); prints the table last.

No tuner: the lists are fixed, so the same configs can be compiled beforehand for sm_90a on a
machine without a GPU (`configs`). The GPU runs are scripts/device/simt_gemm.sh's.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import engine  # noqa: E402
from phases import (check_listed, confirm_tuned_bests, median, phase_parser, print_configs, read_json,  # noqa: E402
                    tune_listed)
from engine.space import EntityError  # noqa: E402
from engine.workloads import PRESETS, gemm_args  # noqa: E402

WORKLOADS = ["G1", "G2", "G3", "G5"]
CHECK_SHAPES = [(200, 264, 136), (70, 68, 100), (130, 300, 580)]  # (M, N, K): tails everywhere

# The TMA loaders: block m n, warp m n, thread m n, lanes_n, stages (pipeline cp_async_S), loader (tma:
# A transposed by the producers; tma_rows: A's rows as they land); their fixed knobs (block_k 32,
# vectors 4, pad 0, unroll 32, no slices) are TMA_FIXED's.
TMA_KNOBS = ("block_m", "block_n", "warp_m", "warp_n", "thread_m", "thread_n", "warp_lanes_n", "pipeline", "loader")
TMA_FIXED = (("block_k", 32), ("vector_a", 4), ("vector_b", 4), ("smem_pad", 0), ("unroll_k", 32), ("slice_k", 1))
TMA_TILES = [
    # 8 consumer warps of 128 accumulators (232 registers each after setmaxnreg), 2 per scheduler
    *[(128, 256, 64, 64, 8, 8, lanes, stages, "tma") for lanes in (4, 8) for stages in ("cp_async_3", "cp_async_4")],
    (128, 256, 64, 64, 4, 8, 4, "cp_async_4", "tma"), (128, 256, 32, 128, 8, 8, 8, "cp_async_4", "tma"),
    (128, 256, 32, 128, 8, 8, 8, "cp_async_3", "tma"), (128, 256, 32, 128, 4, 8, 8, "cp_async_4", "tma"),
    (256, 128, 64, 64, 8, 8, 8, "cp_async_3", "tma"), (256, 128, 128, 32, 8, 8, 4, "cp_async_3", "tma"),
    # 4 consumer warps of 128 accumulators (255 registers), one block an SM
    (128, 128, 64, 64, 8, 8, 8, "cp_async_4", "tma"),
    # 8 consumer warps of 64 accumulators
    (128, 128, 32, 64, 4, 8, 4, "cp_async_4", "tma"),
    # smaller tiles, several blocks an SM: for 1024³ and the skinny shape, more blocks than SMs
    *[(64, 64, 32, 32, 4, 4, 8, stages, loader) for loader in ("tma", "tma_rows")
      for stages in ("cp_async_3", "cp_async_4")],
    (64, 64, 32, 32, 4, 4, 4, "cp_async_3", "tma_rows"), (64, 64, 32, 32, 8, 4, 8, "cp_async_3", "tma_rows"),
    (64, 128, 32, 64, 4, 8, 4, "cp_async_3", "tma_rows"), (128, 64, 64, 32, 8, 4, 8, "cp_async_3", "tma_rows"),
    (64, 64, 64, 32, 8, 4, 8, "cp_async_3", "tma_rows"), (32, 64, 32, 32, 4, 4, 8, "cp_async_3", "tma_rows"),
    (64, 32, 32, 32, 4, 4, 8, "cp_async_3", "tma_rows"), (128, 256, 32, 128, 8, 8, 8, "cp_async_4", "tma_rows"),
]
# Split K for shapes of few tiles, 128×3136×576's 98 at 64×64: the tiles above, K's split and how the splits
# are summed (through the workspace, or over a cluster's shared memory, as the threads' best of G5 does).
SPLIT_TILES = [
    *[((64, 64, 32, 32, 4, 4, 8, stages, "tma_rows"), split, "workspace") for stages in ("cp_async_3", "cp_async_4")
      for split in (2, 4)],
    ((64, 64, 32, 32, 4, 4, 8, "cp_async_4", "tma_rows"), 8, "workspace"),
    ((64, 64, 32, 32, 4, 4, 8, "cp_async_4", "tma"), 2, "workspace"),
    *[((64, 128, 32, 64, 4, 8, 4, "cp_async_4", "tma_rows"), split, "workspace") for split in (2, 4)],
    *[((128, 64, 64, 32, 8, 4, 8, "cp_async_3", "tma_rows"), split, "workspace") for split in (2, 4)],
    ((32, 64, 32, 32, 4, 4, 8, "cp_async_3", "tma_rows"), 2, "workspace"),
    ((64, 32, 32, 32, 4, 4, 8, "cp_async_3", "tma_rows"), 2, "workspace"),
    # over a cluster: 64x64, 32x64 and 64x32 tiles in 2 and 4 splits, both loaders (G5: 196 to 784 blocks)
    *[((64, 64, 32, 32, 4, 4, 8, stages, loader), split, "cluster") for stages in ("cp_async_3", "cp_async_4")
      for split in (2, 4) for loader in ("tma_rows", "tma")],
    *[((32, 64, 32, 32, 4, 4, 8, "cp_async_3", loader), split, "cluster") for split in (2, 4)
      for loader in ("tma_rows", "tma")],
    *[((64, 32, 32, 32, 4, 4, 8, "cp_async_3", "tma_rows"), split, "cluster") for split in (2, 4)],
    ((32, 64, 16, 32, 1, 4, 2, "cp_async_4", "tma_rows"), 2, "cluster"),
]
# multicast (engine.ops.gemm.tma): the tiles above the squares and G5 pick from, each taken at multicast 1, 2 and
# 4 (`--multicast`); a tile too narrow for a workload's N, or too short for a share of whole swizzle atoms, drops out.
MULTICASTS = (1, 2, 4)
MULTICAST_TILES = [
    *[((128, 256, 64, 64, 8, 8, lanes, stages, "tma"), 1, "workspace") for lanes in (4, 8)
      for stages in ("cp_async_3", "cp_async_4")],
    ((128, 256, 32, 128, 8, 8, 8, "cp_async_4", "tma"), 1, "workspace"),
    ((256, 128, 64, 64, 8, 8, 8, "cp_async_3", "tma"), 1, "workspace"),
    ((128, 128, 64, 64, 8, 8, 8, "cp_async_4", "tma"), 1, "workspace"),
    ((128, 256, 32, 128, 8, 8, 8, "cp_async_4", "tma_rows"), 1, "workspace"),
    *[((64, 64, 32, 32, 4, 4, 8, stages, loader), 1, "workspace") for loader in ("tma", "tma_rows")
      for stages in ("cp_async_3", "cp_async_4")],
    ((64, 128, 32, 64, 4, 8, 4, "cp_async_3", "tma_rows"), 1, "workspace"),
    ((128, 64, 64, 32, 8, 4, 8, "cp_async_3", "tma_rows"), 1, "workspace"),
    *[((64, 64, 32, 32, 4, 4, 8, "cp_async_4", "tma_rows"), split, "workspace") for split in (2, 4)],
    ((64, 64, 32, 32, 4, 4, 8, "cp_async_4", "tma"), 2, "workspace"),
]
# The threads' loaders' bests so far, in the space's knob order: the confirmed G1, G2 and G3 bests
# (docs/benchmarks/operators-h200.md) and session 3's hand-written 8x8 tiling (0.90-0.92 there).
THREADS_BESTS = [
    (128, 256, 32, 64, 64, 8, 2, 8, 1, 4, "cp_async_2", 4, 1, 32, 1, "workspace", "threads"),
    (128, 256, 32, 128, 32, 2, 2, 4, 1, 4, "cp_async_2", 4, 1, 32, 1, "workspace", "threads"),
    (64, 128, 32, 64, 16, 8, 4, 4, 4, 4, "sync", 4, 1, 32, 1, "workspace", "threads"),
    (128, 256, 16, 64, 64, 8, 8, 8, 1, 4, "cp_async_3", 4, 1, 32, 1, "workspace", "threads"),
    (32, 64, 16, 16, 64, 8, 2, 16, 2, 4, "prefetch", 4, 2, 32, 2, "cluster", "threads"),  # G5's
]


def valid(task, entities) -> list:
    """The configs of these entities that this task's space holds and the template accepts."""
    configs = []
    for entity in entities:
        try:
            configs.append(task.config_space.from_entity(entity))
        except EntityError:  # a knob value this workload's space does not offer (G5's split K elsewhere)
            continue
    return [config for config in configs if task.why_invalid(config) is None]


def tma_configs(task, multicast: bool = False) -> list:
    """The TMA loaders' listed configs: TMA_TILES and SPLIT_TILES, or (`multicast`) MULTICAST_TILES at each multicast."""
    if multicast:
        tiles = [(*entry, blocks) for entry in MULTICAST_TILES for blocks in MULTICASTS]
    else:
        tiles = [(tile, 1, "workspace", 1) for tile in TMA_TILES] + [(*entry, 1) for entry in SPLIT_TILES]
    return valid(task, [[[name, "ot", v] for name, v in (*zip(TMA_KNOBS, tile), *TMA_FIXED, ("split_k", split),
                                                          ("split_reduce", reduce), ("multicast", blocks))]
                        for tile, split, reduce, blocks in tiles])


def threads_configs(task) -> list:
    names = task.config_space.knob_names
    return valid(task, [[[name, "ot", v] for name, v in zip(names, best)] for best in THREADS_BESTS])


def tune_tasks(shapes: list[str]) -> list[tuple[str, object]]:
    unknown = [name for name in shapes if name not in WORKLOADS]
    if unknown:
        raise SystemExit(f"--shapes: {', '.join(unknown)} not among {', '.join(WORKLOADS)}")
    return [(name, engine.create_task("gemm", PRESETS[name].args)) for name in shapes or WORKLOADS]


def tune_configs(task, multicast: bool = False) -> list:
    listed = tma_configs(task, multicast=True) if multicast else [*tma_configs(task), *threads_configs(task)]
    return list({c.index: c for c in listed}.values())


def check_tasks() -> list:
    return [engine.create_task("gemm", gemm_args(m, n, k)) for m, n, k in CHECK_SHAPES]


def run_check(options) -> int:
    named = [(f"{t.params.m}x{t.params.n}x{t.params.k}", t) for t in check_tasks()]
    return check_listed(options, named, lambda task: tma_configs(task, options.multicast), build_timeout=60)


def table(rows: list[dict]) -> str:
    """Medians of the rounds; a ratio's interval is the slowest round of one side against the fastest of the other."""
    lines = ["| workload | ours warm µs [range] | TFLOP/s | cuBLAS warm µs [range] | cuBLAS / ours warm [interval] "
             "| ours cold µs | cuBLAS cold µs | cuBLAS / ours cold [interval] | config |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for row in rows:
        ours, vendor = row.get("ours", {}), row.get("cublas", {})
        cells = [row["workload"]]
        for kind in ("warm_us", "cold_us"):
            o, v = ours.get(kind, []), vendor.get(kind, [])
            if not (o and v):
                cells += ["—"] * (4 if kind == "warm_us" else 3)
                continue
            om, vm = median(o), median(v)
            ratio = f"{vm / om:.3f} [{min(v) / max(o):.3f}–{max(v) / min(o):.3f}]"
            if kind == "warm_us":
                cells += [f"{om:.2f} [{min(o):.2f}–{max(o):.2f}]", f"{row['flops'] / om / 1e6:.1f}",
                          f"{vm:.2f} [{min(v):.2f}–{max(v):.2f}]", ratio]
            else:
                cells += [f"{om:.2f}", f"{vm:.2f}", ratio]
        cells.append(" ".join(str(v) for v in row["config"].values()))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def list_configs(multicast: bool) -> int:
    return print_configs([*((task, tma_configs(task, multicast)) for task in check_tasks()),
                          *((task, tune_configs(task, multicast)) for _, task in tune_tasks([]))])


def main(argv=None) -> int:
    parser = phase_parser(__doc__, "simt_gemm")
    parser.add_argument("--shapes", default="", help="tune only these of G1, G2, G3, G5 (comma-separated)")
    parser.add_argument("--multicast", action="store_true",
                        help="check and tune MULTICAST_TILES at multicast 1, 2 and 4 in place of the other lists")
    options = parser.parse_args(argv)
    if options.phase == "check":
        return run_check(options)
    if options.phase == "tune":
        # 8192³'s first run checks C against a float32 product of 8192³ on the CPU: seconds, past the default limit
        return tune_listed(options, tune_tasks([s for s in options.shapes.split(",") if s]),
                           lambda task: tune_configs(task, options.multicast), run_timeout=60.0)
    if options.phase == "confirm":
        rows = confirm_tuned_bests(options, "gemm", "cublas", "cuBLAS")
        print(table(rows))
        return 0
    if options.phase == "table":
        print(table(read_json(options.json).get("confirm", [])))
        return 0
    return list_configs(options.multicast)


if __name__ == "__main__":
    sys.exit(main())
