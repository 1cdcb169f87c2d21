"""Typed readers for settings taken from the environment.

Each raises ImproperlyConfigured on a value it cannot read, so a typo in a
deployment fails at start-up instead of silently falling back to a default.
"""
import os
from pathlib import Path
from typing import Callable

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def envbool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean; use 1/0, true/false, yes/no")


def envint(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None


def envlist(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def envstr(name: str, default: str) -> str:
    return os.environ.get(name, default)


def private_file(path: Path, make: Callable[[], str]) -> str:
    """The text kept in `path`, written once from `make()` readable by its owner only.

    Several processes may race to create it (web server, workers): the first wins and
    the others read what it wrote.
    """
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    with os.fdopen(fd, "w") as stream:
        stream.write(make() + "\n")
    return path.read_text().strip()
