"""The FAIR autotuning benchmark hub's Kernel Tuner files, read where the project keeps real data
(`../shared/data/benchmark_hub` beside the repository; MIT licence and SOURCE_COMMIT in that folder).
The project holds no copy of them."""
from __future__ import annotations

from pathlib import Path

HUB = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "benchmark_hub"
CACHES = HUB / "cachefiles"
KERNELS = HUB / "kernels"
GPUS = ("A100", "A4000", "MI250X", "W6600")
KERNEL_DIRS = ("convolution_milo", "dedispersion_milo")
CONFIGS = {"convolution_milo": 4362, "dedispersion_milo": 11130}
# What the MI250X files, whose device_name is empty, are named on import.
MI250X = "mi250x"


def cache_path(kernel: str, gpu: str) -> Path:
    path = CACHES / kernel / f"{gpu}.json.gz"
    assert path.is_file(), f"{path} is missing: the benchmark hub data lives in ../shared/data/benchmark_hub"
    return path


def device_for(gpu: str) -> str | None:
    return MI250X if gpu == "MI250X" else None


def all_caches() -> list[tuple[str, str]]:
    return [(kernel, gpu) for kernel in KERNEL_DIRS for gpu in GPUS]
