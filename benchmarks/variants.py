"""A config's variants along one knob, for the benchmarks: `--set KNOB=VALUE` arguments, and the variants
of a log's fastest configs that a tuning run measures first (so its model sees the knob move).

A knob added to a template leaves every logged record at its default; a model-based tuner resuming from
those records learns nothing of it. Measuring the top configs at the knob's other options gives the
model pairs that differ in that knob alone, and shows what it does on the configs that matter.
"""
from __future__ import annotations

import argparse
import json
import re
from typing import Any, Iterable

from engine.confirm import top_k_distinct


def knob_value(text: str) -> tuple[str, Any]:
    """argparse type of `KNOB=VALUE`: an integer where VALUE is one, else the string."""
    name, equals, raw = text.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError(f"{text!r} is not KNOB=VALUE")
    return name, json.loads(raw) if re.fullmatch(r"-?\d+", raw) else raw


def seeds(task, records: Iterable, knob: str, others: dict[str, Any], top: int) -> list:
    """The valid variants along `knob` (with `others` set in them) of the `top` fastest distinct configs
    of `records` that have not been measured yet."""
    space = task.config_space
    measured = {r.config_index for r in records}
    out = []
    for record in top_k_distinct(records, top):
        base = space.get(record.config_index)
        for config in space.along(base, knob, others):
            if config.index not in measured and task.why_invalid(config) is None:
                measured.add(config.index)
                out.append(config)
    return out
