"""The device probes' NVML samples (scripts/device/smi_samples.py): nvidia-smi's lines read back, and a
phase's mean taken over the samples inside it only."""
from __future__ import annotations

import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "device"))

from smi_samples import Sample, mean_between, parse_sample  # noqa: E402


def test_a_line_of_nvidia_smi_is_a_sample_at_its_time():
    sample = parse_sample("2026/12/05 15:20:01.250, 1755, 612.37\n")
    assert sample.seconds == time.mktime(time.strptime("2026/12/05 15:20:01", "%Y/%m/%d %H:%M:%S")) + 0.25
    assert (sample.sm_clock_mhz, sample.power_w) == (1755.0, 612.37)
    assert parse_sample("2026/12/05 15:20:01, 1980, 100").seconds == sample.seconds - 0.25
    assert parse_sample("2026/12/05 15:20:01.250, 1755, [N/A]") is None
    assert parse_sample("No devices were found") is None


def test_a_phase_averages_its_own_samples_only():
    samples = [Sample(10.0, 1980, 300), Sample(11.0, 1700, 650), Sample(12.0, 1600, 690), Sample(13.5, 1980, 310)]
    assert mean_between(samples, 11.0, 12.0) == (1650.0, 670.0, 2)
    clock, power, seen = mean_between(samples, 12.5, 13.0)
    assert math.isnan(clock) and math.isnan(power) and seen == 0
