"""The web server as `./tw up` runs it (gunicorn, or the development server), in a process of
its own on a free loopback port, for tests that need a real server: connection counts,
outages of the database or Redis, the schemathesis run."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import requests

from tunerweb.up import ROOT, free_port, web_server_argv, web_server_env


class LiveServer:
    def __init__(self, log_path: Path, env: dict[str, str], *, dev_server: bool = False,
                 sizes: tuple[int, int] = (1, 2)) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self._log = open(log_path, "ab")
        argv = web_server_argv("127.0.0.1", self.port, dev_server, sizes)
        self.proc = subprocess.Popen(
            argv, cwd=ROOT, env={**web_server_env(dev_server), "DJANGO_SETTINGS_MODULE": "tunerweb.settings", **env},
            stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        try:
            self._wait_ready()
        except AssertionError:
            self.stop()
            raise

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:]

    def _wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"the web server exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                requests.get(self.url + "/api/", timeout=2)
                return
            except (requests.ConnectionError, requests.Timeout):
                time.sleep(0.2)
        raise AssertionError(f"the web server did not answer within {timeout} s:\n{self.log_tail()}")

    def pids(self) -> list[int]:
        """The server's processes: gunicorn's master and its workers."""
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        return [self.proc.pid, *(int(pid) for pid in children.read_text().split())]

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait(timeout=10)
        self._log.close()
