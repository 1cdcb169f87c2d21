"""What code a record measured: a digest of exactly what ran.

`config.code_hash` in a log line is the digest of the generated CUDA source and its
launch (entry name, grid, block, shared memory), the compile options, the target
architecture and the generator version. A page recomputes it for today's engine to
tell a record of the code a config generates now ("current") from one made by older
generator code ("changed"); records without one (TopHub's, imports) are "unknown".

A template may say its generator changed in a way the source does not show (a launch
rule read elsewhere) by raising its `generator_version`; GENERATOR_VERSION covers what
every template shares (the measuring harness's argument order, say).
"""
from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from .gpu.nvrtc import BASE_OPTIONS
from .space import EntityError

if TYPE_CHECKING:  # pragma: no cover
    from .ops.base import KernelSource
    from .space import ConfigEntity
    from .task import Task

GENERATOR_VERSION = "1"
PREFIX = "sha256:"


def generator_version(template) -> str:
    """The engine's and the template's generator versions, as one string."""
    return f"{GENERATOR_VERSION}.{getattr(template, 'generator_version', '1')}"


def code_hash(source: "KernelSource", arch: str, generator: str, options: tuple[str, ...] = ()) -> str:
    """The digest of one compiled launch: source, launch shape, compile options, arch, generator."""
    what = {
        "generator": generator,
        "arch": arch,
        "options": list(BASE_OPTIONS + tuple(options)),
        "entry": source.name,
        "grid": list(source.grid),
        "block": list(source.block),
        "shared_bytes": source.shared_bytes,
        "arg_order": list(source.arg_order),
        "output_index": source.output_index,
        "source": source.code,
    }
    digest = hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()
    return PREFIX + digest


def arch_of_capability(compute_capability: str) -> str | None:
    """"9.0" gives "sm_90"; None where the capability is unknown (TopHub's GPUs, replays)."""
    major, _, minor = (compute_capability or "").partition(".")
    if not (major.isdigit() and (minor or "0").isdigit()):
        return None
    return f"sm_{major}{minor or '0'}"


def config_code_hash(task: "Task", config: "ConfigEntity", arch: str) -> str | None:
    """The hash today's engine gives `config` of `task` on `arch`; None when it makes no kernel of it."""
    try:
        source = task.template.kernel(task.params, config)
    except (ValueError, NotImplementedError):
        return None
    return code_hash(source, arch, generator_version(task.template))


CODE_CURRENT, CODE_CHANGED, CODE_UNKNOWN = "current", "changed", "unknown"


def code_status(task: "Task | None", entity, recorded: str | None, compute_capability: str) -> str:
    """Whether a record of `entity` with hash `recorded`, made on a GPU of that compute
    capability, measured the code the config generates today: CODE_CURRENT, CODE_CHANGED
    (different code now, or a config the space no longer has) or CODE_UNKNOWN (no hash, no
    task, no architecture)."""
    arch = arch_of_capability(compute_capability)
    if not recorded or task is None or arch is None:
        return CODE_UNKNOWN
    try:
        config = task.config_space.from_entity(entity)
    except EntityError:
        return CODE_CHANGED
    return CODE_CURRENT if config_code_hash(task, config, arch) == recorded else CODE_CHANGED
