"""Who runs a JobRun: claimed with one conditional UPDATE, so a run never runs twice at once.

(healthchecks' sendalerts pattern: the UPDATE's WHERE says "still free", and the row
count says whether this worker won.) Every later write of the run's worker names the
claim token it got; a cancel, or another worker taking over a silent run, makes
those writes match nothing, and the worker stops.
"""
from __future__ import annotations

import threading
import uuid

from django.conf import settings
from django.db import close_old_connections, connection
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from .models import JobRun, State, Worker, stale_before


class ClaimLost(Exception):
    """Another worker took the run over (its worker had gone silent); stop without writing."""


def claim(run_id: int, worker: Worker) -> uuid.UUID | None:
    """Take the run for `worker`, or None when it is finished or running elsewhere.

    Free means: queued; or running under a worker silent for too long; or running
    under this very worker, which can only mean it died mid-run and restarted
    (a worker runs one job at a time).
    """
    token = uuid.uuid4()
    now = timezone.now()
    free = Q(state=State.QUEUED) | Q(state=State.RUNNING) & (Q(heartbeat_at__lt=stale_before()) | Q(worker=worker))
    won = JobRun.objects.filter(free, pk=run_id, device_id=worker.device_id).update(
        state=State.RUNNING,
        claim_token=token,
        worker=worker,
        heartbeat_at=now,
        started_at=Coalesce(F("started_at"), now),
        attempts=F("attempts") + 1,
        message="",
    )
    return token if won else None


def held(run_id: int, token: uuid.UUID):
    """The run's row, as long as this claim still holds it."""
    return JobRun.objects.filter(pk=run_id, claim_token=token)


def finish(run_id: int, token: uuid.UUID, state: State, message: str = "") -> bool:
    """End a running run; a cancelled one stays cancelled."""
    return bool(
        held(run_id, token).filter(state=State.RUNNING).update(state=state, message=message, finished_at=timezone.now())
    )


def release(run_id: int, token: uuid.UUID) -> None:
    """The worker is done with the run, whatever its state: the pages stop waiting for it."""
    held(run_id, token).update(claim_token=None)


class RunHeartbeat:
    """Refresh the run's heartbeat from a thread while the tuning loop works, so a
    long batch (compiling, timing) does not look like a dead worker."""

    def __init__(self, run_id: int, token: uuid.UUID) -> None:
        self.run_id, self.token = run_id, token
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat-run-{run_id}", daemon=True)

    def _beat(self) -> None:
        try:
            while not self._stop.wait(settings.TUNERWEB_WORKER_HEARTBEAT_SECONDS):
                close_old_connections()
                held(self.run_id, self.token).update(heartbeat_at=timezone.now())
        finally:
            connection.close()

    def __enter__(self) -> "RunHeartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
