"""How close a config runs to what its GPU allows: the roofline (Williams et al., 2009).

A workload's arithmetic intensity is its FLOPs over the least bytes a run must move
(`Workload.bytes_moved`); at that intensity a GPU can do at most
min(peak FP32 FLOP/s, intensity × DRAM bandwidth). "% of peak" is a record's FLOP/s over
that bound; where the bytes are not counted, over peak FP32 alone.

A GPU's peaks come from its recorded properties where its worker announced them (SMs, boost
clock and compute capability give FP32 FLOP/s; memory clock and bus width give DRAM bandwidth);
GPUs known only from imported logs (TopHub's v100) and replay devices (`h200-replay`, which
answer from a recording of the GPU they name) read the vendors' datasheets (boost clock, FP32
without tensor cores).
"""
from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Case, ExpressionWrapper, F, FloatField, Q, Value, When
from django.db.models.functions import Cast, Coalesce, Least

from .models import Device, MeasurementRecord
from .visibility import PUBLIC

REPLAY_SUFFIX = "-replay"


@dataclass(frozen=True)
class Peak:
    gflops: float  # peak FP32, GFLOP/s
    bandwidth: float  # DRAM, GB/s
    source: str = "the datasheet"  # where the figures come from, as the roofline page says it

    def bound(self, intensity: float | None) -> float:
        """The most GFLOP/s a kernel of this arithmetic intensity (FLOP per byte) can reach."""
        if intensity is None:
            return self.gflops
        return min(self.gflops, intensity * self.bandwidth)


# -model= slug -> datasheet FP32 GFLOP/s and DRAM GB/s. TopHub's GPUs and today's.
KNOWN_PEAKS: dict[str, Peak] = {
    "h200": Peak(67_000, 4_800),
    "h100": Peak(67_000, 3_350),
    "a100": Peak(19_500, 1_555),
    "a10": Peak(31_200, 600),
    "l4": Peak(30_300, 300),
    "a4000": Peak(19_200, 448),
    "t4": Peak(8_100, 320),
    "v100": Peak(15_700, 900),
    "p100": Peak(10_600, 732),
    "1080ti": Peak(11_340, 484),
    "titanx": Peak(10_970, 480),
    "tx2": Peak(666, 59.7),
    "jetson-nano": Peak(236, 25.6),
}


# FP32 lanes per SM by compute capability (the CUDA programming guide's throughput table);
# one fused multiply-add a lane a clock is two FLOPs.
FP32_LANES_PER_SM = {
    "6.0": 64, "6.1": 128, "6.2": 128, "7.0": 64, "7.2": 64, "7.5": 64, "8.0": 64, "8.6": 128,
    "8.7": 128, "8.9": 128, "9.0": 128, "10.0": 128, "10.3": 128, "12.0": 128,
}


def recorded_peak(device: Device) -> Peak | None:
    """The peaks the device's own recorded properties give; None where one of them is missing."""
    lanes = FP32_LANES_PER_SM.get(device.compute_capability)
    if device.is_replay or not (lanes and device.sm_count and device.clock_mhz
                                and device.memory_clock_mhz and device.memory_bus_bits):
        return None
    gflops = 2 * lanes * device.sm_count * device.clock_mhz / 1000
    # DRAM moves data on both clock edges; the bus width is in bits.
    bandwidth = 2 * device.memory_clock_mhz * device.memory_bus_bits / 8 / 1000
    return Peak(gflops, bandwidth, source="the GPU's recorded properties")


def peak_of(device: Device) -> Peak | None:
    return recorded_peak(device) or KNOWN_PEAKS.get(device.model.removesuffix(REPLAY_SUFFIX))


def intensity_of(workload) -> float | None:
    if not workload.flops or not workload.bytes_moved:
        return None
    return workload.flops / workload.bytes_moved


def percent_of_peak(record: MeasurementRecord, peak: Peak | None) -> float | None:
    if peak is None or record.gflops is None:
        return None
    return 100 * record.gflops / peak.bound(intensity_of(record.workload))


def with_percent_of_peak(records, peaks: dict[int, Peak | None]):
    """Attach `percent_of_peak` to each record (workload and device already fetched)."""
    for record in records:
        record.percent_of_peak = percent_of_peak(record, peaks.get(record.device_id))
        yield record


def device_peaks() -> dict[int, Peak | None]:
    return {device.pk: peak_of(device) for device in Device.objects.all()}


def percent_of_peak_expression(peaks: dict[int, Peak | None]):
    """The same figure in SQL, for sorting a paginated table by it: GFLOPS over the bound of
    the record's device at its workload's intensity (null for GPUs of unknown peak)."""
    intensity = Cast(F("workload__flops"), FloatField()) / Cast(F("workload__bytes_moved"), FloatField())
    whens = [
        When(Q(device_id=pk), then=Coalesce(Least(Value(peak.gflops), intensity * Value(peak.bandwidth)), Value(peak.gflops)))
        for pk, peak in peaks.items() if peak is not None
    ]
    if not whens:
        return Value(None, output_field=FloatField())
    bound = Case(*whens, default=Value(None), output_field=FloatField())
    return ExpressionWrapper(Value(100.0) * F("gflops") / bound, output_field=FloatField())


@dataclass(frozen=True)
class RooflinePoint:
    record: MeasurementRecord
    intensity: float
    gflops: float
    percent_of_peak: float | None


@dataclass
class Roofline:
    device: Device
    peak: Peak | None
    points: list[RooflinePoint]
    without_bytes: list[MeasurementRecord]  # bests whose workload's bytes are not counted

    @property
    def ridge(self) -> float | None:
        """The intensity where bandwidth stops bounding and compute starts."""
        return self.peak.gflops / self.peak.bandwidth if self.peak else None


def roofline(device: Device, viewer=PUBLIC) -> Roofline:
    """Each workload's best on `device` (of what `viewer` may read) at its arithmetic intensity, under the GPU's roofs."""
    points, without, peak = [], [], peak_of(device)
    for best in MeasurementRecord.objects.visible_to(viewer).filter(device=device).best_per_gpu():
        intensity = intensity_of(best.workload)
        if intensity is None or best.gflops is None:
            without.append(best)
        else:
            points.append(RooflinePoint(best, intensity, best.gflops, percent_of_peak(best, peak)))
    points.sort(key=lambda p: p.intensity)
    return Roofline(device=device, peak=peak, points=points, without_bytes=without)
