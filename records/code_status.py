"""Whether a record measured the code its config generates today (`engine.codehash`).

"current": the record's `code_hash` is what today's engine generates for that config on
that GPU's architecture; "changed": it generates different code now (the record is of
older kernel code); "unknown": the record has no hash (TopHub's, imports) or the GPU's
architecture or the template is not known here.
"""
from __future__ import annotations

import json

from django.db import models

from engine import CODE_CHANGED, CODE_CURRENT, CODE_UNKNOWN, BadArgs, UnknownTemplate, code_status, create_task


class CodeStatus(models.TextChoices):
    CURRENT = CODE_CURRENT, "current code"
    CHANGED = CODE_CHANGED, "code changed since"
    UNKNOWN = CODE_UNKNOWN, "unknown code"


class CodeHashes:
    """Code statuses, each worked out once for the life of one page or answer."""

    def __init__(self) -> None:
        self._tasks: dict[int, object] = {}
        self._statuses: dict[tuple, CodeStatus] = {}

    def status(self, workload, device, entity, code_hash: str | None) -> CodeStatus:
        if not code_hash:
            return CodeStatus.UNKNOWN
        key = (workload.pk, device.compute_capability, json.dumps(entity), code_hash)
        if key not in self._statuses:
            found = code_status(self._task(workload), entity, code_hash, device.compute_capability)
            self._statuses[key] = CodeStatus(found)
        return self._statuses[key]

    def _task(self, workload):
        if workload.pk not in self._tasks:
            try:
                self._tasks[workload.pk] = create_task(workload.task_name, workload.args)
            except (BadArgs, UnknownTemplate):
                self._tasks[workload.pk] = None
        return self._tasks[workload.pk]
