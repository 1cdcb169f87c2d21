"""`./tw up`: prepare the database, make a login, start the dashboard, stop cleanly on Ctrl-C.

Run as `python -m tunerweb.up [--host H] [--port P]`. The processes it starts are
listed in `Stack`; each is stopped, in reverse order, when any one exits or on Ctrl-C.
"""
from __future__ import annotations

import argparse
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ADMIN_USER = "admin"


class Stack:
    """Child processes started in order and stopped in reverse."""

    def __init__(self) -> None:
        self.procs: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, argv: list[str], **kwargs) -> subprocess.Popen:
        proc = subprocess.Popen(argv, cwd=ROOT, **kwargs)
        self.procs.append((name, proc))
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
                proc.send_signal(signal.SIGINT)
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
        password = secrets.token_urlsafe(12)
        User.objects.create_superuser(ADMIN_USER, "", password)
        password_file.write_text(password + "\n")
        password_file.chmod(0o600)
    if password_file.exists():
        return password_file.read_text().strip()
    return "(set earlier; reset with: python manage.py changepassword admin)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tw up", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=os.environ.get("TUNERWEB_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("TUNERWEB_PORT", "8000")))
    args = parser.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tunerweb.settings")
    from django.conf import settings

    var_dir = Path(settings.VAR_DIR)
    var_dir.mkdir(parents=True, exist_ok=True)
    manage("migrate", "--noinput", "-v", "0")
    manage("collectstatic", "--noinput", "-v", "0")
    password = ensure_admin(var_dir)

    stack = Stack()
    stack.start("web", [sys.executable, "manage.py", "runserver", "--noreload", f"{args.host}:{args.port}"])
    url = f"http://{args.host}:{args.port}/"
    print(f"\ntunerweb is up at {url}\nlog in as {ADMIN_USER} / {password}\nCtrl-C stops everything.\n", flush=True)
    try:
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
