"""The GPU measurer: configs in, results out, compiling and timing overlapped.

For one batch: configs the space's rules reject, or that the template cannot
turn into a kernel, fail at once with INSTANTIATION_ERROR; the rest go to the
builder's pool, and each kernel that compiles goes to the runner child while
the others are still compiling. A task's inputs and numpy reference are made
once (fixed seed) and kept by the runner.
"""
from __future__ import annotations

import time
from dataclasses import replace
from multiprocessing.connection import wait
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from engine.codehash import code_hash, generator_version
from engine.logfile import ErrorNo
from engine.measure import Measurer, MeasureResult
from engine.ops.base import KernelSource

from .builder import DEFAULT_TIMEOUT_S as BUILD_TIMEOUT_S, Builder
from .device import arch_of
from .environment import measuring_environment
from .runner import DEFAULT_TIMEOUT_S as RUN_TIMEOUT_S, Runner, TimingSettings

if TYPE_CHECKING:  # pragma: no cover
    from engine.space import ConfigEntity
    from engine.task import Task

POLL_S = 0.05


class GpuMeasurer(Measurer):
    def __init__(
        self,
        device_id: int = 0,
        build_workers: int | None = None,
        cache_dir: str | Path | None = None,
        build_timeout: float = BUILD_TIMEOUT_S,
        run_timeout: float = RUN_TIMEOUT_S,
        timing: TimingSettings | None = None,
        seed: int = 0,
    ):
        self.seed = seed
        self.device_id = device_id
        self.timing = timing or TimingSettings()
        self._runner = Runner(device_id, run_timeout, self.timing)
        self.device = self._runner.start()
        self._arch = arch_of(self.device)
        try:
            self._builder = Builder(self._arch, build_workers, cache_dir, build_timeout)
        except BaseException:
            self._runner.close()  # nobody else holds the runner child to stop it
            raise

    def environment(self) -> dict:
        return measuring_environment(self.device_id, self.device)

    @property
    def runner_restarts(self) -> int:
        return self._runner.restarts

    def prepare(self, task: "Task") -> None:
        """Make the task's inputs and reference (once) and hand them to the runner."""
        if self._runner.has_task(task.workload_key):
            return
        inputs = task.template.make_inputs(task.params, np.random.default_rng(self.seed))
        reference = task.template.reference(task.params, inputs)
        self._runner.add_task(task.workload_key, inputs, reference)

    def measure(self, task: "Task", configs: Sequence["ConfigEntity"]) -> list[MeasureResult]:
        return self.measure_sources(task, [self._source(task, config) for config in configs])

    def measure_sources(self, task: "Task", sources: Sequence[KernelSource | MeasureResult]) -> list[MeasureResult]:
        """Measure kernels of `task` (a MeasureResult in the list is an early failure, passed through)."""
        self.prepare(task)
        results: list[MeasureResult | None] = list(s if isinstance(s, MeasureResult) else None for s in sources)
        generator = generator_version(task.template)
        hashes = {i: code_hash(s, self._arch, generator, self._builder.options)
                  for i, s in enumerate(sources) if isinstance(s, KernelSource)}
        build_seconds: dict[int, float] = {}
        for i, source in enumerate(sources):
            if isinstance(source, KernelSource):
                self._builder.submit(i, source)
        while any(r is None for r in results):
            for i, build in self._builder.poll():
                build_seconds[i] = build.seconds
                if build.ok:
                    self._runner.submit(i, task.workload_key, build.cubin_path, sources[i])
                else:
                    results[i] = replace(MeasureResult.failure(build.error_no, build.message, build.seconds),
                                         code_hash=hashes[i])
            for i, run in self._runner.poll():
                all_cost = build_seconds.get(i, 0.0) + run.seconds
                if run.ok:
                    results[i] = MeasureResult(ErrorNo.NO_ERROR, run.costs, all_cost=all_cost, code_hash=hashes[i])
                else:
                    results[i] = replace(MeasureResult.failure(run.error_no, run.message, all_cost),
                                         code_hash=hashes[i])
            if any(r is None for r in results):
                self._wait()
        return results  # type: ignore[return-value]

    def _wait(self) -> None:
        deadlines = [d for d in (self._builder.next_deadline(), self._runner.next_deadline()) if d is not None]
        limit = min([POLL_S] + [max(0.0, d - time.monotonic()) for d in deadlines])
        connections = self._builder.connections() + self._runner.connections()
        if connections:
            wait(connections, timeout=limit)

    @staticmethod
    def _source(task: "Task", config: "ConfigEntity") -> KernelSource | MeasureResult:
        reason = task.why_invalid(config)
        if reason:
            return MeasureResult.failure(ErrorNo.INSTANTIATION_ERROR, reason)
        try:
            return task.template.kernel(task.params, config)
        except (ValueError, NotImplementedError) as exc:
            return MeasureResult.failure(ErrorNo.INSTANTIATION_ERROR, f"no kernel for this config: {exc}")

    def close(self) -> None:
        self._builder.close()
        self._runner.close()
