"""Feature vectors for the cost model: the template's features of a config.

`task.template.features(params, config)` names its features (knob values and
derived ones: threads per block, work per thread, shared memory bytes,
unroll...). The vector layout is the tuned task's own feature names; records of
other workloads (transfer learning) are featurised on their own tasks and laid
out by name, a feature their template lacks left missing (NaN, which XGBoost
treats as missing).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from ..columns import ConfigColumns
from ..logfile import Record
from ..measure import result_of
from .base import config_from_entity, score_of

if TYPE_CHECKING:  # pragma: no cover
    from ..space import ConfigEntity
    from ..task import Task


class FeatureTable:
    """Feature vectors of one task's configs, computed once per config index."""

    def __init__(self, task: "Task"):
        self.task = task
        self.names: list[str] = list(task.template.features(task.params, task.config_space.get(next(task.config_space.iter_indexes()))))
        self._cache: dict[int, np.ndarray] = {}

    def vector(self, task: "Task", config: "ConfigEntity") -> np.ndarray:
        values = task.template.features(task.params, config)
        return np.array([values.get(name, np.nan) for name in self.names], dtype=np.float32)

    def of(self, configs: "Sequence[ConfigEntity] | ConfigColumns") -> np.ndarray:
        """Feature rows of these configs: through the template's batch path where it has one
        (numpy over all of them at once), else one config at a time, each remembered."""
        if len(configs) and self.task.template.has_batch_path:
            columns = configs if isinstance(configs, ConfigColumns) else ConfigColumns.of_configs(self.task.config_space, configs)
            return self._rows(self.task.template.features_of_columns(self.task.params, columns), len(columns))
        rows = []
        for config in configs:
            row = self._cache.get(config.index)
            if row is None:
                row = self._cache[config.index] = self.vector(self.task, config)
            rows.append(row)
        return np.vstack(rows) if rows else np.empty((0, len(self.names)), dtype=np.float32)

    def _rows(self, values: dict, count: int) -> np.ndarray:
        """Columns by name laid out as rows; a number the same for every config fills its column,
        a name the template lacks is missing (NaN), as `vector` lays out one config."""
        out = np.empty((count, len(self.names)), dtype=np.float32)
        for j, name in enumerate(self.names):
            column = values.get(name, np.nan)
            # float64 first, then float32: the per-config row rounds Python floats the same way.
            out[:, j] = np.asarray(column, dtype=np.float64)
        return out

    def of_records(self, records: Iterable[Record]) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """Features, scores and group sizes of records of any workloads and GPUs.

        A group is one (GPU model, workload): a ranking loss compares configs
        only within a group. Records whose task or config cannot be rebuilt
        here (unknown template, a space without that config) are left out.
        """
        by_group: dict[tuple, list[tuple[np.ndarray, float]]] = {}
        tasks: dict[tuple, Task | None] = {}
        for record in records:
            task = tasks.get(record.workload_key, False)
            if task is False:
                task = tasks[record.workload_key] = self._task_of(record)
            if task is None:
                continue
            config = config_from_entity(task.config_space, record.entity)
            if config is None:
                continue
            row = self.vector(task, config)
            by_group.setdefault((record.model, *record.workload_key), []).append((row, score_of(task, result_of(record))))
        rows, scores, groups = [], [], []
        for members in by_group.values():
            rows += [row for row, _ in members]
            scores += [score for _, score in members]
            groups.append(len(members))
        x = np.vstack(rows) if rows else np.empty((0, len(self.names)), dtype=np.float32)
        return x, np.array(scores, dtype=np.float64), groups

    def _task_of(self, record: Record) -> "Task | None":
        if record.workload_key == self.task.workload_key:
            return self.task
        from ..task import create_task  # the task module imports templates; keep that off the import path

        try:
            return create_task(record.task_name, record.args, limits=self.task.limits)
        except (ValueError, KeyError, TypeError):
            return None
