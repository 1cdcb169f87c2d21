"""`./tw up`: prepare the database, make a login, start Redis (if none is reachable), a
tuning worker per GPU (or a replay worker where there is no GPU) and the dashboard;
stop everything cleanly on Ctrl-C.

Run as `python -m tunerweb.up [--host H] [--port P] [--dev-server]`. The dashboard is
gunicorn (static files through whitenoise); `--dev-server` runs Django's development
server instead. The processes it starts are listed in `Stack`; each is stopped, in
reverse order, when any one exits or on Ctrl-C.
"""
from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from .env import private_file

ROOT = Path(__file__).resolve().parent.parent
ADMIN_USER = "admin"
# H5's real H200 recording when it is committed; else a synthetic one is made in var/.
RECORDINGS = [ROOT / "tests" / "data" / "c12_h200_recording.log.gz"]
REPLAY_PACE = "0.05"  # seconds per replayed config, so progress is there to watch
WEB_THREADS = 8


class Stack:
    """Child processes started in order and stopped in reverse."""

    def __init__(self) -> None:
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self.stop_signals: dict[str, int] = {}

    def start(self, name: str, argv: list[str], stop_signal: int = signal.SIGINT, **kwargs) -> subprocess.Popen:
        proc = subprocess.Popen(argv, cwd=ROOT, **kwargs)
        self.procs.append((name, proc))
        self.stop_signals[name] = stop_signal
        return proc

    def wait_any(self) -> str:
        while True:
            for name, proc in self.procs:
                if proc.poll() is not None:
                    return name
            time.sleep(0.5)

    def stop(self) -> None:
        for name, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(self.stop_signals[name])
        deadline = time.monotonic() + 10
        for name, proc in reversed(self.procs):
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()


def manage(*args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, check=True)


def ensure_admin(var_dir: Path) -> str:
    """Create the `admin` superuser once; its password lives in var/admin-password.txt."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    password_file = var_dir / "admin-password.txt"
    User = get_user_model()
    if not User.objects.filter(username=ADMIN_USER).exists():
        password = private_file(password_file, lambda: secrets.token_urlsafe(12))
        User.objects.create_superuser(ADMIN_USER, "", password)
    if password_file.exists():
        return password_file.read_text().strip()
    return "(set earlier; reset with: python manage.py changepassword admin)"


def reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def free_port() -> int:
    """A TCP port free on the loopback now (for test and benchmark servers)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(host: str, port: int, timeout: float = 30) -> None:
    """Until something listens at host:port, so the URL printed answers at once."""
    deadline = time.monotonic() + timeout
    while not reachable(host, port):
        if time.monotonic() > deadline:
            raise SystemExit(f"the web server did not start listening on {host}:{port} within {timeout:.0f} s")
        time.sleep(0.2)


def ensure_redis(stack: Stack, redis_url: str, var_dir: Path) -> bool:
    """Redis at REDIS_URL, started from PATH's redis-server when none answers there."""
    parts = urlsplit(redis_url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 6379
    if reachable(host, port):
        return True
    server = shutil.which("redis-server")
    if host not in ("127.0.0.1", "localhost") or server is None:
        print(f"Redis is not reachable at {host}:{port}, so no tuning job can run. Install and start it "
              f"(Debian/Ubuntu: apt-get install -y redis-server), or point REDIS_URL at one.", file=sys.stderr)
        return False
    data = var_dir / "redis"
    data.mkdir(exist_ok=True)
    stack.start("redis", [server, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(data),
                          "--save", "60 1", "--appendonly", "no"], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not reachable(host, port):
        if time.monotonic() > deadline:
            raise SystemExit(f"redis-server did not start on port {port}")
        time.sleep(0.2)
    print(f"started redis-server on {host}:{port} (data in {data})", flush=True)
    return True


def count_gpus() -> int:
    """GPUs CuPy sees, asked in a child so this process never holds a CUDA context."""
    probe = "import cupy; print(cupy.cuda.runtime.getDeviceCount())"
    try:
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        print("asking CuPy for GPUs took over 60 s: starting no GPU worker", file=sys.stderr)
        return 0
    return int(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip().isdigit() else 0


def replay_recording(var_dir: Path) -> Path:
    if os.environ.get("TUNERWEB_REPLAY_RECORDING"):  # a device script's dry run without a GPU
        return Path(os.environ["TUNERWEB_REPLAY_RECORDING"])
    for path in RECORDINGS:
        if path.exists():
            return path
    path = var_dir / "replay" / "c12_synthetic.log.gz"
    if not path.exists():
        import gzip

        from engine import PRESETS, create_task, synthetic_recording, write_records

        preset = PRESETS["C12"]
        path.parent.mkdir(exist_ok=True)
        with gzip.open(path, "wt", encoding="utf-8") as stream:
            write_records(stream, synthetic_recording(create_task(preset.task_name, preset.args), 1000, seed=1))
    return path


def start_workers(stack: Stack, var_dir: Path) -> str:
    """A worker per GPU, or one replay worker; says which."""
    worker = [sys.executable, "manage.py", "run_worker"]
    gpus = count_gpus()
    for index in range(gpus):
        stack.start(f"worker-gpu{index}", [*worker, "--gpu", str(index)], stop_signal=signal.SIGQUIT)
    if gpus:
        return f"{gpus} GPU worker(s)"
    recording = replay_recording(var_dir)
    stack.start("worker-replay", [*worker, "--replay", str(recording), "--pace", REPLAY_PACE],
                stop_signal=signal.SIGQUIT)
    return f"no GPU here: a replay worker answers from {recording}"


def web_server_sizes(cpus: int | None = None) -> tuple[int, int]:
    """(gunicorn workers, threads each): a process per core (two at least, so one slow
    request never holds the site), and threads for the requests that wait on the database
    meanwhile; TUNERWEB_WEB_WORKERS and TUNERWEB_WEB_THREADS override them. Each thread
    keeps one database connection, so workers x threads bounds those."""
    cpus = cpus or os.cpu_count() or 1
    workers = int(os.environ.get("TUNERWEB_WEB_WORKERS") or max(2, min(cpus, 8)))
    threads = int(os.environ.get("TUNERWEB_WEB_THREADS") or WEB_THREADS)
    return workers, threads


def web_server_argv(host: str, port: int, dev_server: bool = False, sizes: tuple[int, int] | None = None) -> list[str]:
    if dev_server:
        return [sys.executable, "manage.py", "runserver", "--noreload", f"{host}:{port}"]
    workers, threads = sizes or web_server_sizes()
    return [
        sys.executable, "-m", "gunicorn", "tunerweb.wsgi:application", "--bind", f"{host}:{port}",
        "--workers", str(workers), "--threads", str(threads), "--worker-class", "gthread",
        # An upload of the largest accepted log takes a while on a slow link.
        "--timeout", "300", "--graceful-timeout", "10", "--access-logfile", "-",
        # Its control socket is one path per user (~/.gunicorn): two servers would share it.
        "--no-control-socket",
    ]


def web_server_env(dev_server: bool) -> dict[str, str]:
    """The development server starts a thread per request, and a thread that ended
    leaves its database connection open: it gets no persistent connections."""
    return {**os.environ, "TUNERWEB_DB_CONN_MAX_AGE": "0"} if dev_server else dict(os.environ)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tw up", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=os.environ.get("TUNERWEB_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("TUNERWEB_PORT", "8000")))
    parser.add_argument("--dev-server", action="store_true",
                        help="Django's development server instead of gunicorn (for debugging only)")
    args = parser.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tunerweb.settings")
    from django.conf import settings

    var_dir = Path(settings.VAR_DIR)
    var_dir.mkdir(parents=True, exist_ok=True)
    manage("migrate", "--noinput", "-v", "0")
    manage("collectstatic", "--noinput", "-v", "0")
    password = ensure_admin(var_dir)

    # Ctrl-C, and a plain `kill`, stop everything (also when started with SIGINT ignored, as `&` does).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    stack = Stack()
    try:
        workers = "no workers (Redis is missing)"
        if ensure_redis(stack, settings.CELERY_BROKER_URL, var_dir):
            workers = start_workers(stack, var_dir)
        stack.start("web", web_server_argv(args.host, args.port, args.dev_server), stop_signal=signal.SIGTERM,
                    env=web_server_env(args.dev_server))
        wait_for_port(args.host, args.port)
        url = f"http://{args.host}:{args.port}/"
        server = "Django's development server" if args.dev_server else "gunicorn"
        print(f"\ntunerweb is up at {url} ({server})\nlog in as {ADMIN_USER} / {password}\n{workers}\n"
              "Ctrl-C stops everything.\n", flush=True)
        ended = stack.wait_any()
        print(f"{ended} stopped; stopping the rest", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nstopping", file=sys.stderr)
        return 0
    finally:
        stack.stop()


if __name__ == "__main__":
    sys.exit(main())
