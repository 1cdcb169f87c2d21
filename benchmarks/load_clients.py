"""benchmarks.load's clients: browsers on the load mix's pages, threads in a few processes.

Each asks in turn for a leaderboard, the job's page and the job's JSON (ENDPOINTS), pausing
after each answer, and tallies the answers' times by request.
"""
from __future__ import annotations

import threading
import time

import requests

ENDPOINTS = ("leaderboard", "job page", "job JSON")
REQUEST_TIMEOUT = 10.0


class Browser:
    """One client as the pages make it: a keep-alive session that keeps each answer's ETag and
    asks again with If-None-Match (a 304 is an answer, as a browser's cache makes it), and reads
    the job's JSON as the job page's script does: whole as the page opens, then only what was
    stored since the last record it has of each run (`?since=`). `naive` is the earlier client:
    the API's whole JSON every time, nothing conditional."""

    def __init__(self, url: str, paths: dict[str, str], cookies: dict, token: dict, naive: bool) -> None:
        self.url, self.paths, self.token, self.naive = url, paths, token, naive
        self.session = requests.Session()
        self.session.cookies.update(cookies)
        self.etags: dict[str, str] = {}
        self.since: dict[int, int] = {}  # run id -> the last record id read of it
        self.whole_since: dict[int, int] = {}  # the same, of the last whole JSON read

    def path(self, name: str) -> str:
        if name != "job JSON":
            return self.paths[name]
        if self.naive:
            return self.paths["job API"]
        query = ",".join(f"{run}:{record}" for run, record in sorted(self.since.items()))
        return self.paths["job JSON"] + (f"?since={query}" if query else "")

    def get(self, name: str) -> tuple[int, int]:
        """(HTTP status, bytes read) of one request, or for a browser's job page of the page and
        the job's JSON read whole, as the page's script does when the page opens; RequestException
        when one fails."""
        status, size = self.read(name, self.path(name))
        if name != "job page" or self.naive or status not in (200, 304):
            return status, size
        self.since.clear()
        progress_status, progress_size = self.read("job JSON", self.path("job JSON"))
        if progress_status == 304:  # the browser's copy of the whole, and the last records it holds
            self.since = dict(self.whole_since)
        return (status if progress_status in (200, 304) else progress_status), size + progress_size

    def read(self, name: str, path: str) -> tuple[int, int]:
        headers = dict(self.token) if self.naive else {}
        if not self.naive and path in self.etags:
            headers["If-None-Match"] = self.etags[path]
        response = self.session.get(self.url + path, headers=headers, timeout=REQUEST_TIMEOUT)
        body = response.content  # the whole body, as a browser reads it
        if response.status_code == 200 and not self.naive:
            if name == "job JSON":  # a poll's earlier URLs are not asked again
                self.etags = {key: tag for key, tag in self.etags.items()
                              if not key.startswith(self.paths[name] + "?since=")}
            if "ETag" in response.headers:
                self.etags[path] = response.headers["ETag"]
            if name == "job JSON":
                for run in response.json()["runs"]:
                    if run["points"]["record"]:
                        self.since[run["id"]] = run["points"]["record"][-1]
                if path == self.paths[name]:
                    self.whole_since = dict(self.since)
        return response.status_code, len(body)


def warm_up(url: str, paths: dict, cookies: dict, token: dict) -> None:
    """Each page asked for twice before the load: a server just started compiles its templates
    and fills its cache on its first requests, which is not what the load is to measure."""
    with requests.Session() as session:
        session.cookies.update(cookies)
        for _ in range(2):
            for path in paths.values():
                session.get(url + path, headers=token, timeout=REQUEST_TIMEOUT)


def client_loop(browser: Browser, start: float, until: float, think: float, tally: dict, lock) -> None:
    time.sleep(max(0.0, start - time.monotonic()))
    turn = 0
    while time.monotonic() < until:
        if turn and think:
            time.sleep(think)
        name = ENDPOINTS[turn % len(ENDPOINTS)]
        turn += 1
        started = time.monotonic()
        try:
            status, size = browser.get(name)
            kind = None if status in (200, 304) else f"HTTP {status} {name}"
        except (requests.RequestException, ValueError) as exc:
            kind, status, size = type(exc).__name__, 0, 0
        took = time.monotonic() - started
        with lock:
            record(tally, name, kind, took, status, size)


def record(tally: dict, name: str, kind: str | None, took: float, status: int, size: int) -> None:
    if kind is None:
        tally["latencies"][name].append(took)
        tally["not_modified"][name] += status == 304
        tally["kilobytes"][name] += size / 1024
    else:
        tally["errors"] += 1
        tally["error_kinds"][kind] = tally["error_kinds"].get(kind, 0) + 1


def client_process(args: tuple) -> dict:
    """A client thread in this process for each of `starts` (its first request's
    time.monotonic(), which child processes share), until `until`; their tally. Clients run
    in several processes so the load generator's own GIL does not queue the answers it times."""
    url, paths, cookies, token, naive, starts, until, think = args
    tally = {"latencies": {name: [] for name in ENDPOINTS}, "not_modified": {name: 0 for name in ENDPOINTS},
             "kilobytes": {name: 0.0 for name in ENDPOINTS}, "errors": 0, "error_kinds": {}}
    lock = threading.Lock()
    threads = [threading.Thread(target=client_loop, daemon=True,
                                args=(Browser(url, paths, cookies, token, naive), start, until, think, tally, lock))
               for start in starts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=max(0.0, until - time.monotonic()) + REQUEST_TIMEOUT + 5)
    return tally
