"""GPU worker processes: one Celery worker per GPU (or per replay recording).

`python manage.py run_worker --gpu 0` (or `--replay FILE`) works out the device,
then becomes `celery -A tunerweb worker -Q <gpu model> --concurrency 1`; the
worker's settings travel in one environment variable. Inside the worker, signal
handlers register it (device info, host, queue), beat its heartbeat, and re-send
runs of its queue that nobody holds (sent while the broker was down, or left by a
worker that died). The pool child builds the measurer on first use.

A replay worker answers from a recorded log instead of a GPU. Its device is the
recording's GPU model with `-replay` appended (`h200-replay`, Device.is_replay),
so replayed measurements never mix with real ones on the leaderboards.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import socket
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from celery import signals
from django.conf import settings
from django.db import close_old_connections, connection
from django.utils import timezone

from engine import (DeviceInfo, Measurer, PacedReplayMeasurer, ReplayMeasurer, ReplayStopwatch, Stopwatch,
                    load_recording, make_measurer, make_target, recording_model)

log = logging.getLogger(__name__)

ENV_VAR = "TUNERWEB_WORKER"
REPLAY_SUFFIX = "-replay"
# Heartbeats between two looks for orphaned runs of this worker's queue.
REQUEUE_EVERY_BEATS = 6


@dataclass(frozen=True)
class WorkerConfig:
    """What one worker process serves; travels to the Celery process as JSON."""

    kind: str  # "gpu" or "replay"
    device: dict  # DeviceInfo.to_dict()
    gpu_index: int | None = None
    recording: str = ""
    recording_device: str = ""  # replay: the GPU model of a Kernel Tuner cache that names none
    pace: float = 0.0  # replay: seconds each replayed config takes
    workloads: tuple = ()  # replay: (task name, canonical args) pairs of the recording
    slot: int = 0  # replay: tells apart several replay workers of one recording on one host

    @property
    def queue(self) -> str:
        return self.device["model"]

    @property
    def name(self) -> str:
        where = f"gpu{self.gpu_index}" if self.kind == "gpu" else ("replay" if not self.slot else f"replay{self.slot}")
        return f"{self.queue}@{socket.gethostname()}:{where}"

    def device_info(self) -> DeviceInfo:
        return DeviceInfo(**self.device)

    def to_env(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_env(cls) -> "WorkerConfig | None":
        raw = os.environ.get(ENV_VAR)
        if not raw:
            return None
        data = json.loads(raw)
        data["workloads"] = tuple(tuple(w) for w in data.get("workloads", ()))
        return cls(**data)


# -- working out the device ------------------------------------------------------------

def replay_config(recording: str | Path, pace: float = 0.0, recording_device: str | None = None,
                  slot: int = 0) -> WorkerConfig:
    """A replay worker of an AutoTVM log or a Kernel Tuner cache (`recording_device`: its GPU model,
    for a cache whose device name is empty); `slot` tells apart several of one recording on a host."""
    records = load_recording(recording, recording_device)
    model = recording_model(records)
    device = DeviceInfo(
        model=model + REPLAY_SUFFIX, name=f"{model} replay of {Path(recording).name}", is_replay=True
    )
    workloads = tuple(sorted({r.workload_key for r in records}))
    return WorkerConfig(kind="replay", device=device.to_dict(), recording=str(Path(recording).resolve()),
                        recording_device=recording_device or "", pace=pace, workloads=workloads, slot=slot)


def gpu_config(index: int) -> WorkerConfig:
    """The GPU at `index`, as the GPU measurer's device module describes it. This makes
    a CUDA context: call it only in a process that then execs (run_worker does)."""
    from engine.gpu import query_device  # needs CuPy and a GPU

    return WorkerConfig(kind="gpu", device=query_device(index).to_dict(), gpu_index=index)


def celery_argv(config: WorkerConfig, loglevel: str = "INFO") -> list[str]:
    # `python -m celery` finds Celery wherever this interpreter does (a venv, PYTHONPATH).
    return [
        sys.executable, "-m", "celery", "-A", "tunerweb", "worker", "-Q", config.queue, "--pool", "solo", "-n", config.name,
        "--without-gossip", "--without-mingle", "--loglevel", loglevel,
    ]


def exec_worker(config: WorkerConfig, loglevel: str = "INFO") -> None:
    """Become the Celery worker for `config` (this process is replaced)."""
    os.environ[ENV_VAR] = config.to_env()
    argv = celery_argv(config, loglevel)
    os.execv(argv[0], argv)


# -- inside the worker process -----------------------------------------------------------

def already_running(config: WorkerConfig) -> str | None:
    """Why a second worker under this name must not start: one is online on this host
    with a live process (two would take each other's runs as their own restarts)."""
    from .models import Worker

    other = Worker.objects.online().filter(name=config.name, hostname=socket.gethostname()).first()
    if other is None or other.pid is None or other.pid == os.getpid():
        return None
    try:
        os.kill(other.pid, 0)
    except ProcessLookupError:
        return None  # it died without a word; its heartbeat is just not stale yet
    except PermissionError:
        pass  # alive, under another user
    return f"worker {config.name} is already running here (pid {other.pid}); one worker per GPU"


def register(config: WorkerConfig):
    """This worker's row (and its device's), made or refreshed; its heartbeat starts now."""
    from records.models import Device

    from .models import Worker

    info = config.device_info()
    device, _ = Device.objects.update_or_create(model=info.model, defaults={
        "name": info.name, "compute_capability": info.compute_capability, "sm_count": info.sm_count,
        "memory_bytes": info.memory_bytes, "clock_mhz": info.clock_mhz, "memory_clock_mhz": info.memory_clock_mhz,
        "memory_bus_bits": info.memory_bus_bits, "driver_version": info.driver_version,
        "cuda_version": info.cuda_version, "is_replay": info.is_replay,
    })
    worker, _ = Worker.objects.update_or_create(name=config.name, defaults={
        "hostname": socket.gethostname(), "pid": os.getpid(), "queue": config.queue, "device": device,
        "gpu_index": config.gpu_index, "is_replay": info.is_replay, "recording": config.recording,
        "device_info": config.device, "workloads": [list(w) for w in config.workloads],
        "started_at": timezone.now(), "last_heartbeat": timezone.now(),
    })
    return worker


def this_worker():
    """The Worker row of this process; RuntimeError outside a worker started by run_worker."""
    from .models import Worker

    config = WorkerConfig.from_env()
    if config is None:
        raise RuntimeError(f"not a tunerweb worker: start workers with `manage.py run_worker` ({ENV_VAR} is unset)")
    return Worker.objects.select_related("device").get(name=config.name)


class WorkerHeartbeat:
    """A thread in the worker's main process: beats, and now and then re-sends orphaned runs."""

    def __init__(self, worker_id: int, queue: str) -> None:
        self.worker_id, self.queue = worker_id, queue
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="worker-heartbeat", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        from .models import Worker
        from .submission import requeue_orphans

        beats = 0
        try:
            while not self._stop.wait(settings.TUNERWEB_WORKER_HEARTBEAT_SECONDS):
                try:
                    close_old_connections()
                    Worker.objects.filter(pk=self.worker_id).update(last_heartbeat=timezone.now())
                    beats += 1
                    if beats % REQUEUE_EVERY_BEATS == 0:
                        requeue_orphans(self.queue)
                except Exception:  # a database hiccup must not end the heartbeat for good
                    log.exception("worker heartbeat failed")
        finally:
            connection.close()


_heartbeat: WorkerHeartbeat | None = None


@signals.worker_ready.connect
def _on_worker_ready(**_kwargs) -> None:
    global _heartbeat
    config = WorkerConfig.from_env()
    if config is None:
        return
    from .submission import requeue_orphans

    worker = register(config)
    sent = requeue_orphans(config.queue, worker, all_queued=True)
    log.info("worker %s serving queue %s; re-sent %d waiting runs", worker.name, config.queue, sent)
    connection.close()
    _heartbeat = WorkerHeartbeat(worker.pk, config.queue)
    _heartbeat.start()


@signals.worker_shutdown.connect
def _on_worker_shutdown(**_kwargs) -> None:
    config = WorkerConfig.from_env()
    if _heartbeat is None or config is None:
        return
    _heartbeat.stop()
    from .models import Worker

    Worker.objects.filter(pk=_heartbeat.worker_id).update(last_heartbeat=None)


# -- the measurer, built in the pool child on first use ------------------------------

# One measurer per worker config, kept for the life of the pool child (a GPU
# measurer holds compile workers and a timing child; building it per job is waste).
_measurers: dict[str, Measurer] = {}


def stopwatch_for(config: WorkerConfig) -> Stopwatch:
    """A confirmation's stopwatch: for a GPU, a fresh measuring process of its own (closed
    when the confirmation ends); for a replay, the recording's repeated measurements."""
    if config.kind == "replay":
        target = make_target(config.device_info().model)
        return ReplayStopwatch(load_recording(config.recording, config.recording_device or None), target, name=Path(config.recording).name)
    from engine.gpu import FreshProcessStopwatch  # needs CuPy and a GPU

    return FreshProcessStopwatch(device_id=config.gpu_index or 0)


def measurer_for(config: WorkerConfig) -> Measurer:
    key = config.to_env()
    if key not in _measurers:
        device = config.device_info()
        if config.kind == "replay":
            target = make_target(device.model)
            recorded = load_recording(config.recording, config.recording_device or None)
            records = [dataclasses.replace(r, target=target) for r in recorded]
            _measurers[key] = PacedReplayMeasurer(ReplayMeasurer(records, device=device), config.pace)
        else:
            _measurers[key] = make_measurer("gpu", device_id=config.gpu_index)
    return _measurers[key]
