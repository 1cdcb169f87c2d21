"""The FAIR autotuning benchmark hub's Kernel Tuner files, read where the project keeps real data
(`benchmark_hub` in shared_data.SHARED_DATA; MIT licence and SOURCE_COMMIT in that folder).
The project holds no copy of them."""
from __future__ import annotations

import gzip
import io
import json
from contextlib import contextmanager
from pathlib import Path

from shared_data import SHARED_DATA

HUB = SHARED_DATA / "benchmark_hub"
CACHES = HUB / "cachefiles"
KERNELS = HUB / "kernels"
GPUS = ("A100", "A4000", "MI250X", "W6600")
KERNEL_DIRS = ("convolution_milo", "dedispersion_milo")
CONFIGS = {"convolution_milo": 4362, "dedispersion_milo": 11130}
# What the MI250X files, whose device_name is empty, are named on import.
MI250X = "mi250x"


def cache_path(kernel: str, gpu: str) -> Path:
    path = CACHES / kernel / f"{gpu}.json.gz"
    assert path.is_file(), f"{path} is missing: the benchmark hub data lives in {HUB} (set TUNERWEB_SHARED_DATA)"
    return path


def device_for(gpu: str) -> str | None:
    return MI250X if gpu == "MI250X" else None


@contextmanager
def caches_for_the_module(django_db_blocker, kernel: str, gpus=GPUS):
    """`kernel`'s caches of these GPUs imported once for a test module (module_rows' rows, rolled back after
    it; the MI250X's named as on import), giving their one workload."""
    from django.core.management import call_command

    from module_rows import rows_for_the_module
    from records.models import Workload

    with rows_for_the_module(django_db_blocker):
        for gpu in gpus:
            device = device_for(gpu)
            call_command("import_records", str(cache_path(kernel, gpu)), *(["--device", device] if device else []),
                         stdout=io.StringIO())
        yield Workload.objects.get()


def all_caches() -> list[tuple[str, str]]:
    return [(kernel, gpu) for kernel in KERNEL_DIRS for gpu in GPUS]


def unterminated(path: Path, entries: int) -> str:
    """A cache as Kernel Tuner leaves it mid-run: the header, `entries` entries each ending in ",",
    no closing braces (Kernel Tuner's store_cache writes exactly this)."""
    data = json.loads(gzip.decompress(path.read_bytes()))
    header = {k: v for k, v in data.items() if k != "cache"}
    header["cache"] = {}
    text = json.dumps(header, indent="")[:-3]
    for key in list(data["cache"])[:entries]:
        text += "\n" + json.dumps({key: data["cache"][key]})[1:-1] + ","
    return text


def best_records(workload) -> list:
    """Each GPU's best of an imported hub workload, as the record its leaderboard links."""
    from records.standings import workload_bests  # Django's; the engine tests import this module too

    return [standing.record for standing in workload_bests(workload)]
