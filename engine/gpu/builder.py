"""Compile kernels with NVRTC in a pool of spawned workers, with a disk cache and a timeout.

The cache holds one cubin per (source, entry name, options, architecture,
NVRTC version). A compile that outlasts the timeout costs its worker (killed,
replaced) and gives BUILD_TIMEOUT; a rejected source gives COMPILE_DEVICE with
the compiler's log in the message. `submit` + `poll` let a caller run kernels
while later ones still compile; `build` is the blocking form.
"""
from __future__ import annotations

import hashlib
import os
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Hashable, Iterable

from engine.ops.base import KernelSource
from engine.logfile import ErrorNo

from .child import Child, ChildDied
from .nvrtc import CompileError, compile_to_cubin, nvrtc_version

DEFAULT_TIMEOUT_S = 10.0


def default_cache_dir() -> Path:
    root = os.environ.get("TUNERWEB_KERNEL_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tunerweb", "kernels"
    )
    return Path(root)


@dataclass(frozen=True)
class BuildResult:
    error_no: ErrorNo
    cubin_path: str | None = None
    message: str = ""
    seconds: float = 0.0
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.error_no == ErrorNo.NO_ERROR


def _compile_worker(conn: Connection, arch: str, options: tuple[str, ...]) -> None:
    """Worker loop: (code, entry name, cubin path) in, (error_no, message, seconds) out."""
    while True:
        job = conn.recv()
        if job is None:
            return
        code, name, path = job
        start = time.perf_counter()
        try:
            cubin, _ = compile_to_cubin(code, arch, options, name=f"{name}.cu")
        except CompileError as exc:
            conn.send((ErrorNo.COMPILE_DEVICE, str(exc), time.perf_counter() - start))
            continue
        except Exception as exc:  # anything else is the toolchain's failure, not the config's
            conn.send((ErrorNo.COMPILE_HOST, f"{type(exc).__name__}: {exc}", time.perf_counter() - start))
            continue
        partial = f"{path}.{os.getpid()}.tmp"
        with open(partial, "wb") as out:
            out.write(cubin)
        os.replace(partial, path)  # atomic: a reader never sees half a cubin
        conn.send((ErrorNo.NO_ERROR, "", time.perf_counter() - start))


@dataclass
class _Job:
    job_id: Hashable
    source: KernelSource
    path: Path
    started: float = 0.0


class Builder:
    def __init__(
        self,
        arch: str,
        workers: int | None = None,
        cache_dir: str | Path | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        options: tuple[str, ...] = (),
    ):
        self.arch = arch
        self.timeout = timeout
        self.options = tuple(options)
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self._salt = f"{arch}\0{' '.join(self.options)}\0nvrtc {nvrtc_version()}"
        self._workers = [Child(_compile_worker, (arch, self.options), name=f"nvrtc-{i}") for i in range(workers or os.cpu_count() or 1)]
        self._busy: dict[int, _Job] = {}
        self._queue: deque[_Job] = deque()
        self._done: list[tuple[Hashable, BuildResult]] = []

    def cache_path(self, source: KernelSource) -> Path:
        key = hashlib.sha256(f"{self._salt}\0{source.name}\0{source.code}".encode()).hexdigest()
        return self.cache_dir / key[:2] / f"{key}.cubin"

    def submit(self, job_id: Hashable, source: KernelSource) -> None:
        path = self.cache_path(source)
        if path.exists():
            self._done.append((job_id, BuildResult(ErrorNo.NO_ERROR, str(path), cached=True)))
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        self._queue.append(_Job(job_id, source, path))

    def connections(self) -> list[Connection]:
        return [self._workers[i].conn for i in self._busy if self._workers[i].conn is not None]

    def next_deadline(self) -> float | None:
        return min((job.started + self.timeout for job in self._busy.values()), default=None)

    def poll(self, wait_s: float = 0.0) -> list[tuple[Hashable, BuildResult]]:
        """Finished builds (cache hits first); waits up to `wait_s` when none is ready."""
        self._dispatch()
        if not self._done and self._busy:
            deadline = self.next_deadline()
            limit = max(0.0, min(wait_s, deadline - time.monotonic())) if deadline else wait_s
            wait(self.connections(), timeout=limit)
        self._collect()
        self._expire()
        self._dispatch()
        done, self._done = self._done, []
        return done

    def build(self, sources: Iterable[KernelSource]) -> list[BuildResult]:
        sources = list(sources)
        for i, source in enumerate(sources):
            self.submit(i, source)
        results: dict[int, BuildResult] = {}
        while len(results) < len(sources):
            results.update(self.poll(wait_s=1.0))
        return [results[i] for i in range(len(sources))]

    def close(self) -> None:
        for worker in self._workers:
            worker.stop()
        self._busy.clear()

    def __enter__(self) -> "Builder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _dispatch(self) -> None:
        for index, worker in enumerate(self._workers):
            if not self._queue:
                return
            if index in self._busy:
                continue
            job = self._queue.popleft()
            if job.path.exists():  # an identical source finished since it was queued
                self._done.append((job.job_id, BuildResult(ErrorNo.NO_ERROR, str(job.path), cached=True)))
                continue
            try:
                worker.send((job.source.code, job.source.name, str(job.path)))
            except ChildDied:
                worker.kill()
                worker.send((job.source.code, job.source.name, str(job.path)))
            job.started = time.monotonic()
            self._busy[index] = job

    def _collect(self) -> None:
        for index, job in list(self._busy.items()):
            worker = self._workers[index]
            if worker.conn is None or not worker.conn.poll():
                continue
            del self._busy[index]
            try:
                error_no, message, seconds = worker.recv()
            except ChildDied as exc:
                self._done.append((job.job_id, BuildResult(ErrorNo.COMPILE_HOST, message=f"compiler process died: {exc}")))
                continue
            path = str(job.path) if error_no == ErrorNo.NO_ERROR else None
            self._done.append((job.job_id, BuildResult(ErrorNo(error_no), path, message=message, seconds=seconds)))

    def _expire(self) -> None:
        now = time.monotonic()
        for index, job in list(self._busy.items()):
            if now - job.started > self.timeout:
                self._workers[index].kill()
                del self._busy[index]
                self._done.append((
                    job.job_id,
                    BuildResult(ErrorNo.BUILD_TIMEOUT, message=f"compile took over {self.timeout:g} s",
                                seconds=now - job.started),
                ))
