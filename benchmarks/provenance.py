"""Which commit a benchmark ran at: light enough for a device box without the tuners' libraries."""
from __future__ import annotations

import os
import subprocess


def git_describe() -> str:
    # The device machine gets a copy of the tree (its .git, if any, is not this checkout's):
    # the sender names the commit.
    if os.environ.get("TUNERWEB_COMMIT"):
        return os.environ["TUNERWEB_COMMIT"]
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (no git checkout here)"
