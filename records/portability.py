"""How well each GPU's best config travels: its speed on every other GPU that measured it, as a
percentage of that GPU's own best, and the one config best across all of them (the highest
worst-case percentage). The portability view of the compare-GPUs page."""
from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Min

from .models import Device, MeasurementRecord, Workload
from .standings import workload_bests


@dataclass(frozen=True)
class Cell:
    """One config on one GPU: its time and its percentage of that GPU's best; None where not measured
    (or it failed there)."""

    seconds: float | None
    percent: float | None


@dataclass(frozen=True)
class PortabilityRow:
    device: Device  # whose best config this row is
    best: MeasurementRecord
    cells: list[Cell]  # one per column GPU


@dataclass(frozen=True)
class RobustConfig:
    config_index: int
    knobs: dict
    cells: list[Cell]

    @property
    def worst_percent(self) -> float:
        return min(cell.percent for cell in self.cells)


@dataclass
class Portability:
    devices: list[Device]
    rows: list[PortabilityRow]
    robust: RobustConfig | None  # None when no config was measured without error on every GPU


def config_times(workload: Workload, device_ids: list[int]) -> dict[int, dict[int, float]]:
    """config index -> device id -> its fastest error-free mean time there."""
    rows = (MeasurementRecord.objects.filter(workload=workload, device_id__in=device_ids).valid()
            .values("config_index", "device_id").annotate(seconds=Min("mean_cost")).order_by())
    times: dict[int, dict[int, float]] = {}
    for row in rows:
        times.setdefault(row["config_index"], {})[row["device_id"]] = row["seconds"]
    return times


def portability(workload: Workload) -> Portability:
    bests = workload_bests(workload)
    devices = [best.device for best in bests]
    times = config_times(workload, [d.pk for d in devices])
    # Every cell compares fastest error-free means, so a GPU's own best reads 100 %.
    own_best = {d.pk: min(measured[d.pk] for measured in times.values() if d.pk in measured) for d in devices}

    def cells(config_index: int) -> list[Cell]:
        measured = times.get(config_index, {})
        return [Cell(measured.get(d.pk), 100 * own_best[d.pk] / measured[d.pk] if d.pk in measured else None)
                for d in devices]

    rows = [PortabilityRow(best.device, best.record, cells(best.config_index)) for best in bests]
    robust = None
    everywhere = [index for index, measured in times.items() if len(measured) == len(devices)]
    if devices and everywhere:
        # Highest worst case; a tie goes to the lower index, so the answer is the same every time.
        worst = {index: min(own_best[d] / times[index][d] for d in own_best) for index in everywhere}
        index = max(everywhere, key=lambda i: (worst[i], -i))
        record = MeasurementRecord.objects.filter(workload=workload, config_index=index).only("entity").first()
        robust = RobustConfig(index, record.knobs if record else {}, cells(index))
    return Portability(devices, rows, robust)
