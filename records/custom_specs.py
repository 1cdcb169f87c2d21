"""What the pages show of a custom kernel's spec (engine/ops/custom): its tunable
parameters, restrictions, launch, arguments and source, for the staff's kernel page and
for the leaderboard of any `custom` workload, imported ones included."""
from __future__ import annotations

import math
from dataclasses import dataclass

from engine import CUSTOM_TEMPLATE, CustomParams, SpecError, parse_spec


@dataclass(frozen=True)
class KernelSummary:
    spec: dict
    params: CustomParams
    space_size: int  # configs before restrictions


def kernel_summary(task_name: str, args: list) -> KernelSummary | None:
    """The summary of a custom workload's spec; None for other tasks and for specs the
    engine refuses (a log may hold any JSON: such records still import and rank)."""
    if task_name != CUSTOM_TEMPLATE or not (isinstance(args, list) and len(args) == 1 and isinstance(args[0], dict)):
        return None
    try:
        params = parse_spec(args[0])
    except SpecError:
        return None
    return KernelSummary(args[0], params, math.prod(len(values) for _, values in params.tune_params))
