"""Small helpers that make devices, workloads and records through the ORM.

Defaults are the seed's workload: conv2d_nchw.cuda on the last ResNet-18 layer
(N=1, 7×7, 512→512 channels, 3×3 kernel, stride 1, pad 1), with knobs in TVM's order.
"""
from __future__ import annotations

import hashlib
import itertools

from engine.describe import describe_workload
from engine.logfile import ErrorNo, canonical_args, make_target
from records.models import Baseline, Device, ImportBatch, MeasurementRecord, Workload

C12_ARGS = [
    ["TENSOR", [1, 512, 7, 7], "float32"],
    ["TENSOR", [512, 512, 3, 3], "float32"],
    [1, 1], [1, 1, 1, 1], [1, 1], "float32",
]
C9_ARGS = [
    ["TENSOR", [1, 256, 14, 14], "float32"],
    ["TENSOR", [256, 256, 3, 3], "float32"],
    [1, 1], [1, 1, 1, 1], [1, 1], "float32",
]
_sequence = itertools.count(1)


def make_device(model: str = "v100", **fields) -> Device:
    return Device.objects.create(model=model, **fields)


def make_workload(task_name: str = "conv2d_nchw.cuda", args: list | None = None, flops: int | None = -1) -> Workload:
    """A workload; flops defaults to the engine's count for these args (-1 means "count it")."""
    args = C12_ARGS if args is None else args
    if flops == -1:
        flops = describe_workload(task_name, args).flops
    return Workload.objects.create(task_name=task_name, args_json=canonical_args(args), flops=flops)


def conv2d_entity(tile_f=(-1, 2, 8, 1), tile_y=(-1, 1, 7, 1), tile_x=(-1, 1, 7, 1), tile_rc=(-1, 8),
                  tile_ry=(-1, 3), tile_rx=(-1, 3), auto_unroll_max_step=512, unroll_explicit=1) -> list:
    return [
        ["tile_f", "sp", list(tile_f)], ["tile_y", "sp", list(tile_y)], ["tile_x", "sp", list(tile_x)],
        ["tile_rc", "sp", list(tile_rc)], ["tile_ry", "sp", list(tile_ry)], ["tile_rx", "sp", list(tile_rx)],
        ["auto_unroll_max_step", "ot", auto_unroll_max_step], ["unroll_explicit", "ot", unroll_explicit],
    ]


def make_record(workload: Workload, device: Device, cost: float | None = 100e-6, *, error_no: int = 0,
                entity: list | None = None, timestamp: float | None = None, config_index: int | None = None,
                batch: ImportBatch | None = None, error_msg: str = "", costs: list | None = None,
                **fields) -> MeasurementRecord:
    """A record measured at `cost` seconds (or at `costs`, one per repeat or round); an error
    (error_no != 0) has no cost. `fields` set the rest (kind, cache, rounds, code_hash, ...)."""
    n = next(_sequence)
    ok = error_no == ErrorNo.NO_ERROR
    if costs is not None:
        cost = sum(costs) / len(costs)
    mean_cost = cost if ok else None
    return MeasurementRecord.objects.create(
        device=device,
        workload=workload,
        target=make_target(device.model),
        config_index=n if config_index is None else config_index,
        entity=conv2d_entity() if entity is None else entity,
        costs=(costs or [cost]) if ok else [],
        mean_cost=mean_cost,
        gflops=workload.gflops(mean_cost),
        error_no=error_no,
        error_msg=error_msg,
        all_cost=1.5,
        timestamp=1_700_000_000.0 + n if timestamp is None else timestamp,
        tvm_version="test",
        batch=batch,
        fingerprint=hashlib.sha256(f"factory-{n}".encode()).hexdigest(),
        **fields,
    )


def make_baseline(workload: Workload, device: Device, cost: float, provider: str = Baseline.Provider.CUDNN) -> Baseline:
    return Baseline.objects.create(workload=workload, device=device, provider=provider, cost=cost)


def make_batch(file_name: str = "tuning.log", **fields) -> ImportBatch:
    return ImportBatch.objects.create(file_name=file_name, **fields)
