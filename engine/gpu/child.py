"""A killable worker process, started with `spawn`, talking over a pipe.

Spawn, never fork: a forked child inherits the parent's CUDA state and fails
with cudaErrorInitializationError. Builder workers and the GPU runner are
both such children; when one hangs or dies its owner kills it and starts a
fresh one (AutoTVM's LocalBuilder/LocalRunner do the same).
"""
from __future__ import annotations

import multiprocessing
from multiprocessing.connection import Connection
from typing import Any, Callable


class ChildDied(RuntimeError):
    """The child's end of the pipe closed: it exited or crashed."""


class Child:
    def __init__(self, target: Callable[..., None], args: tuple = (), name: str = "tunerweb-child"):
        self._target = target
        self._args = args
        self._name = name
        self._process: multiprocessing.process.BaseProcess | None = None
        self.conn: Connection | None = None

    def start(self) -> None:
        context = multiprocessing.get_context("spawn")
        parent_end, child_end = context.Pipe()
        process = context.Process(target=self._target, args=(child_end, *self._args), name=self._name, daemon=True)
        process.start()
        child_end.close()
        self._process, self.conn = process, parent_end

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.is_alive()

    @property
    def exitcode(self) -> int | None:
        return None if self._process is None else self._process.exitcode

    def send(self, message: Any) -> None:
        if self.conn is None:
            self.start()
        try:
            self.conn.send(message)
        except (BrokenPipeError, OSError) as exc:
            raise ChildDied(f"{self._name} is gone ({exc})") from None

    def recv(self) -> Any:
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            self._reap()
            raise ChildDied(f"{self._name} exited with code {self.exitcode}") from None

    def kill(self) -> None:
        """Stop the child now (it may be stuck in a kernel or a compile)."""
        if self._process is not None and self._process.is_alive():
            self._process.kill()
        self._reap()

    def stop(self) -> None:
        """Ask the child to finish, then make sure it has."""
        if self.running:
            try:
                self.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
            self._process.join(timeout=5)
        self.kill()

    def _reap(self) -> None:
        if self._process is not None:
            self._process.join(timeout=5)
        if self.conn is not None:
            self.conn.close()
        self.conn = None
