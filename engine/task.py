"""A tuning task: one template applied to one workload's args, on one device's limits."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable

import numpy as np

from . import jsontext
from .logfile import canonical_args
from .columns import ConfigColumns
from .space import ConfigEntity, ConfigSpace
from .ops import BadArgs, DeviceLimits, Template, get_template


@dataclass(eq=False)
class Task:
    """`args` is the JSON list of a log's `input` (tensors as ["TENSOR", shape, dtype])."""

    name: str
    args: list
    params: Any
    template: Template
    config_space: ConfigSpace
    flops: int
    limits: DeviceLimits = field(default_factory=DeviceLimits)

    @property
    def workload_key(self) -> tuple[str, str]:
        """(task name, canonical args): the same key as engine.logfile.Record.workload_key."""
        return (self.name, canonical_args(self.args))

    def why_invalid(self, config: ConfigEntity) -> str | None:
        return self.config_space.why_invalid(config)

    def features(self, config: ConfigEntity) -> dict[str, float]:
        return self.template.features(self.params, config)

    def default_config(self) -> ConfigEntity:
        return self.template.default_config(self.params, self.config_space)

    def __repr__(self) -> str:
        return f"Task({self.name}, {canonical_args(self.args)}, len={len(self.config_space)})"


def args_from_json(text: str) -> list:
    """Workload args typed as JSON text, as in a log's `input`; BadArgs with a readable reason.
    The command line, the job form and baseline files all read typed args through here."""
    try:
        args = jsontext.parse_json(text)
    except json.JSONDecodeError as exc:
        raise BadArgs(f"args are not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except jsontext.UnreadableJSON as exc:
        raise BadArgs(f"args are refused: {exc}") from None
    if not isinstance(args, list):
        raise BadArgs("args must be a JSON list, as in a log's input, e.g. [[\"TENSOR\", [1, 512, 7, 7], \"float32\"], ...]")
    return args


class TemplateRule:
    """The space's rule a template's `why_invalid` makes on a device's limits: called on one
    config it gives the reason (or None); `invalid_mask` is the template's batch check of many
    configs at once (engine.columns.valid_mask), None where the template has no batch path."""

    def __init__(self, template: Template, params: Any, limits: DeviceLimits):
        self.template, self.params, self.limits = template, params, limits

    def __call__(self, config: ConfigEntity) -> str | None:
        return self.template.why_invalid(self.params, config, limits=self.limits)

    @property
    def invalid_mask(self) -> Callable[[ConfigColumns], np.ndarray] | None:
        if not self.template.has_batch_path:
            return None
        return partial(self.template.invalid_of_columns, self.params, limits=self.limits)


def create_task(name: str, args: list, limits: DeviceLimits | None = None) -> Task:
    """The task for a log's task name and args; UnknownTemplate or BadArgs when there is none."""
    template = get_template(name)
    params = template.parse_args(args)
    limits = limits or DeviceLimits()
    space = template.space_on(params, limits)
    space = space.with_rules([TemplateRule(template, params, limits)])
    return Task(name=name, args=args, params=params, template=template, config_space=space,
                flops=template.flops(params), limits=limits)
