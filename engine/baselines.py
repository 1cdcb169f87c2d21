"""Baselines in a log: the providers a tuned kernel is held against and how a log line
says it is one. Written once here; the GPU half measures them, the records app reads them.

A baseline line is an ordinary log record whose `tvm_version` is `baseline:<provider>`
and whose `config.entity` is `[]` (a library call has no knobs); a default-config
baseline keeps the default config's index.
"""
from __future__ import annotations

from .logfile import Record

DEFAULT_CONFIG_BASELINE = "default-config"
# Provider -> what pages call it. The GPU half measures every one but "other" (a time
# someone measured elsewhere and imports as it is).
PROVIDERS: dict[str, str] = {
    "cudnn": "cuDNN",
    "cublas": "cuBLAS",
    DEFAULT_CONFIG_BASELINE: "untuned default config",
    "other": "other",
}
MEASURED_PROVIDERS = ("cudnn", "cublas", DEFAULT_CONFIG_BASELINE)
VERSION_PREFIX = "baseline:"


def baseline_version(provider: str) -> str:
    """The `tvm_version` of a baseline line of this provider."""
    if provider not in PROVIDERS:
        raise ValueError(f"unknown baseline provider {provider!r}; known: {', '.join(PROVIDERS)}")
    return VERSION_PREFIX + provider


def baseline_provider_of(record: Record) -> str | None:
    """The provider a log line is a baseline of (as written, maybe unknown), or None when it
    is not a baseline line (another `tvm_version`, or knobs in its entity)."""
    if not record.tvm_version.startswith(VERSION_PREFIX) or record.entity:
        return None
    return record.tvm_version.removeprefix(VERSION_PREFIX)
