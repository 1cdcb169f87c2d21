"""Who spent the machine's CPU while benchmarks.load's load ran, from /proc (Linux)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import psycopg

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu(pids: set[int] | None = None, group: int | None = None) -> dict[int, float]:
    """CPU seconds (user + system) so far of each live process among `pids` or in process group
    `group`, from /proc (Linux; empty elsewhere)."""
    found = {}
    for entry in Path("/proc").iterdir() if Path("/proc/self/stat").exists() else []:
        if not entry.name.isdigit() or (pids is not None and int(entry.name) not in pids):
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        if group is None or int(fields[2]) == group:  # fields[0] is the state: pgrp is the 5th field of stat
            found[int(entry.name)] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return found


def database_pids(database_url: str) -> set[int]:
    """The PostgreSQL backends serving the benchmark's database (the web server's and the worker's)."""
    name = urlsplit(database_url).path.lstrip("/")
    with psycopg.connect(database_url, autocommit=True) as conn:
        return {pid for (pid,) in conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                                                [name]).fetchall()}


class CpuTally:
    """Who spent the machine's CPU while the load ran: the web server, the replay worker,
    PostgreSQL (the benchmark database's backends) and the load generator (this process
    group: its client processes and the sampling loop)."""

    def __init__(self, server: subprocess.Popen, worker: subprocess.Popen, database_url: str) -> None:
        self.groups = {"web server": server.pid, "replay worker": worker.pid, "load generator": os.getpgrp()}
        self.database_url = database_url
        self.start = self.sample()
        self.seconds: dict[str, float] = {}

    def sample(self) -> dict[str, dict[int, float]]:
        found = {name: process_cpu(group=group) for name, group in self.groups.items()}
        found["PostgreSQL"] = process_cpu(pids=database_pids(self.database_url))
        return found

    def add_live(self) -> None:
        """Called during the load: the client processes end with it, and so would their figures."""
        now = self.sample()
        for name, pids in now.items():
            spent = sum(cpu - self.start[name].get(pid, 0.0) for pid, cpu in pids.items())
            self.seconds[name] = max(self.seconds.get(name, 0.0), spent)
