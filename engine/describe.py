"""What the records side needs to know of a workload before any config runs: its key, the
FLOPs and least bytes of one run, and, where the FLOPs are unknown, why."""
from __future__ import annotations

from dataclasses import dataclass

from .flops import FlopCountError, flop_count
from .logfile import canonical_args
from .ops import RECORDED_TEMPLATES, TEMPLATES, BadArgs


@dataclass(frozen=True)
class WorkloadFacts:
    task_name: str
    args_key: str            # canonical JSON of the args: (task_name, args_key) names the workload
    flops: int | None        # None where no count is known
    bytes_moved: int | None  # None where the template does not count them, or there is no template
    note: str | None = None  # why `flops` is None


def describe_workload(task_name: str, args: list) -> WorkloadFacts:
    """A template counts its own task (from the params it parses); TVM tasks without a
    template are counted by engine.flops; anything else has no count."""
    key = canonical_args(args)
    cls = TEMPLATES.get(task_name) or RECORDED_TEMPLATES.get(task_name)
    if cls is not None:
        template = cls()
        try:
            params = template.parse_args(args)
        except BadArgs as exc:
            return WorkloadFacts(task_name, key, None, None, f"no FLOP count for {task_name} ({exc})")
        return WorkloadFacts(task_name, key, template.flops(params), template.bytes_moved(params))
    try:
        flops = flop_count(task_name, args)
    except FlopCountError as exc:
        return WorkloadFacts(task_name, key, None, None, f"no FLOP count for {task_name} ({exc})")
    if flops is None:
        return WorkloadFacts(task_name, key, None, None, f"no FLOP counter for task {task_name}")
    return WorkloadFacts(task_name, key, flops, None)
