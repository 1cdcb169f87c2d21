"""Whether a record measured the code its config generates today.

"current": the record's `code_hash` is what today's engine generates for that config on
that GPU's architecture; "changed": it generates different code now (the record is of
older kernel code); "unknown": the record has no hash (TopHub's, imports) or the GPU's
architecture or the template is not known here.
"""
from __future__ import annotations

import json

from django.db import models

from engine.codehash import arch_of_capability, config_code_hash
from engine.space import EntityError
from engine.task import create_task
from engine.ops import BadArgs, UnknownTemplate


class CodeStatus(models.TextChoices):
    CURRENT = "current", "current code"
    CHANGED = "changed", "code changed since"
    UNKNOWN = "unknown", "unknown code"


class CodeHashes:
    """Today's code hashes, each computed once for the life of one page or answer."""

    def __init__(self) -> None:
        self._tasks: dict[int, object] = {}
        self._hashes: dict[tuple, str | None] = {}

    def status(self, workload, device, entity, code_hash: str | None) -> CodeStatus:
        if not code_hash:
            return CodeStatus.UNKNOWN
        arch = arch_of_capability(device.compute_capability)
        task = self._task(workload)
        if arch is None or task is None:
            return CodeStatus.UNKNOWN
        key = (workload.pk, arch, json.dumps(entity))
        if key not in self._hashes:
            try:
                config = task.config_space.from_entity(entity)
            except EntityError:  # the config no longer exists in the template's space
                self._hashes[key] = None
            else:
                self._hashes[key] = config_code_hash(task, config, arch)
        return CodeStatus.CURRENT if self._hashes[key] == code_hash else CodeStatus.CHANGED

    def _task(self, workload):
        if workload.pk not in self._tasks:
            try:
                self._tasks[workload.pk] = create_task(workload.task_name, workload.args)
            except (BadArgs, UnknownTemplate):
                self._tasks[workload.pk] = None
        return self._tasks[workload.pk]
