"""benchmarks/variants.py: a log's fastest configs at a new knob's other options, measured before tuning."""
import sys
from pathlib import Path

import argparse
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import engine  # noqa: E402
import variants  # noqa: E402
from engine.callbacks import append_to_log  # noqa: E402
from engine.logfile import read_history  # noqa: E402
from engine.logfile import ErrorNo  # noqa: E402
from engine.measure import MeasureResult  # noqa: E402
from engine.workloads import PRESETS  # noqa: E402

TARGET = "cuda -model=h200"


def timed(configs, first_us: float = 10.0) -> list[MeasureResult]:
    """Results 1 µs apart in the order given: the first config the fastest."""
    return [MeasureResult(ErrorNo.NO_ERROR, ((first_us + i) * 1e-6,)) for i, _ in enumerate(configs)]


def test_a_knob_value_argument_is_an_integer_where_it_can_be():
    assert variants.knob_value("block_k=8") == ("block_k", 8)
    assert variants.knob_value("pipeline=cp_async_3") == ("pipeline", "cp_async_3")
    with pytest.raises(argparse.ArgumentTypeError, match="is not KNOB=VALUE"):
        variants.knob_value("block_k")


def test_seeds_are_the_fastest_configs_valid_variants_not_yet_measured(tmp_path):
    task = engine.create_task(PRESETS["IG-C4"].task_name, PRESETS["IG-C4"].args)
    # configs logged before the knob existed: all at its default
    configs = [c for c in task.config_space.sample(np.random.default_rng(3), 60) if c["step_channels"].val == 0][:12]
    log = str(tmp_path / "ig-c4.log")
    append_to_log(log, task, TARGET, configs, timed(configs))
    records = read_history(log)
    fastest = records[:2]

    seeds = variants.seeds(task, records, "step_channels", {"block_k": 8}, top=2)

    assert seeds and all(task.why_invalid(c) is None for c in seeds)
    assert all(c.values()["step_channels"] > 0 and c.values()["block_k"] == 8 for c in seeds)
    # each seed is one of the two fastest configs but for the varied knob and the one it makes moot
    bases = [task.config_space.get(r.config_index).values() for r in fastest]
    moved = {"step_channels", "block_k"}
    for seed in seeds:
        values = seed.values()
        assert any(all(values[k] == base[k] for k in values if k not in moved) for base in bases)
    # once measured, they are not proposed again
    append_to_log(log, task, TARGET, seeds, timed(seeds, first_us=50.0))
    again = variants.seeds(task, read_history(log), "step_channels", {"block_k": 8}, top=2)
    assert not {c.index for c in again} & {c.index for c in seeds}
