"""SM clock and power samples from NVML through nvidia-smi, taken in the background while a probe runs
(scripts/device/gemm_clocks.py, clock_probe.py): is a kernel's time its own, or the clock it ran at?"""
from __future__ import annotations

import contextlib
import subprocess
import tempfile
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Sample:
    seconds: float  # since the epoch, as time.time()
    sm_clock_mhz: float
    power_w: float


def parse_sample(line: str) -> Sample | None:
    """One line of `nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader,nounits`:
    `2026/12/05 15:20:01.123, 1980, 412.50` (the timestamp in local time, as time.mktime reads it); None for a
    line that is not one (a reading of `[N/A]`, a message)."""
    try:
        stamp, clock, power = (part.strip() for part in line.split(","))
        whole, _, fraction = stamp.partition(".")
        seconds = time.mktime(time.strptime(whole, "%Y/%m/%d %H:%M:%S")) + float("0." + (fraction or "0"))
        return Sample(seconds, float(clock), float(power))
    except ValueError:
        return None


@contextlib.contextmanager
def sampled(period_ms: int = 100, gpu: str = "0"):
    """Samples of GPU `gpu` (an index or UUID, as nvidia-smi's --id takes) every `period_ms` while the body runs;
    the list is filled when it ends. power.draw is NVML's average over the last second on Hopper, so it lags."""
    samples: list[Sample] = []
    with tempfile.NamedTemporaryFile("w+", suffix=".csv") as out:
        smi = subprocess.Popen(["nvidia-smi", f"--id={gpu}", "--query-gpu=timestamp,clocks.sm,power.draw",
                                "--format=csv,noheader,nounits", "-lms", str(period_ms)], stdout=out, text=True)
        try:
            yield samples
        finally:
            time.sleep(2 * period_ms / 1e3)
            smi.terminate()
            smi.wait()
            out.seek(0)
            samples.extend(sample for line in out if (sample := parse_sample(line)) is not None)


def mean_between(samples: list[Sample], start: float, end: float) -> tuple[float, float, int]:
    """Mean SM clock (MHz) and power (W) of the samples in [start, end], and how many there were."""
    inside = [s for s in samples if start <= s.seconds <= end]
    if not inside:
        return float("nan"), float("nan"), 0
    return (sum(s.sm_clock_mhz for s in inside) / len(inside), sum(s.power_w for s in inside) / len(inside),
            len(inside))
