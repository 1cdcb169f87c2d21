"""Custom kernels: a user's own CUDA kernel with tunable macros (engine.ops.custom), added by staff.

A kernel is stored as the `custom` workload whose args are `[SPEC]` (canonical JSON, as a
log writes it) plus a CustomKernel row naming it. The spec is checked here only through
`parse_spec`: the web host never compiles or runs the source, only GPU workers build it,
and they run only kernels staff added (`stored_kernel_for` is the submission rule).
"""
from __future__ import annotations

import json

from django.core.exceptions import PermissionDenied
from django.db import transaction

from engine import CUSTOM_TEMPLATE, MAX_SOURCE_CHARS, CustomParams, SpecError, canonical_args, parse_spec
from records.custom_specs import KernelSummary
from records.models import Workload

from .models import CustomKernel

# The whole spec as stored (canonical JSON); the engine caps the source alone.
MAX_SPEC_CHARS = MAX_SOURCE_CHARS + 56_000
SPEC_HELP = (
    'The spec as JSON: kernel_name, sizes, tune_params [[name, [values]], ...], restrictions, block, grid, '
    'shared_bytes, arguments, reference, flops, default (see engine/ops/custom/tiling.py). Leave "source" '
    "out when it is in the Source field."
)


class CustomKernelError(ValueError):
    """A kernel that cannot be added; `field` is the form field the message belongs next to."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def spec_from_fields(source: str, spec_text: str) -> dict:
    """The spec from the form: its JSON, with the source from its own field when given."""
    try:
        spec = json.loads(spec_text)
    except json.JSONDecodeError as exc:
        raise CustomKernelError("spec", f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    if not isinstance(spec, dict):
        raise CustomKernelError("spec", "must be a JSON object")
    if source.strip():
        if "source" in spec:
            raise CustomKernelError("source", 'the source is given twice: here and as "source" in the spec')
        spec["source"] = source
    return spec


def check_spec(spec) -> CustomParams:
    """The parsed spec, or CustomKernelError placed by the part of the spec that is wrong."""
    try:
        size = len(canonical_args([spec]))
    except (TypeError, ValueError) as exc:
        raise CustomKernelError("spec", f"cannot be written as JSON: {exc}") from None
    if size > MAX_SPEC_CHARS:
        raise CustomKernelError("spec", f"the spec is {size} characters of JSON, more than {MAX_SPEC_CHARS}")
    try:
        return parse_spec(spec)
    except SpecError as exc:
        raise CustomKernelError("source" if exc.field == "source" else "spec", str(exc)) from None


def check_new_kernel(name: str, spec) -> str:
    """The name, stripped, when a kernel of this name and spec may be added; else CustomKernelError."""
    name = name.strip()
    if not name:
        raise CustomKernelError("name", "give the kernel a name")
    if CustomKernel.objects.filter(name=name).exists():
        raise CustomKernelError("name", f"a custom kernel named {name!r} already exists")
    check_spec(spec)
    existing = stored_kernel_for([spec])
    if existing is not None:
        raise CustomKernelError("spec", f"this spec is already stored, as the custom kernel {existing.name!r}")
    return name


def add_custom_kernel(user, name: str, spec) -> CustomKernel:
    """Store a checked kernel so it can be tuned; staff only."""
    if not user.is_staff:
        raise PermissionDenied("adding custom kernels is for staff only")
    name = check_new_kernel(name, spec)
    with transaction.atomic():
        workload, _note = Workload.objects.catalog().workload(CUSTOM_TEMPLATE, [spec])
        return CustomKernel.objects.create(name=name, workload=workload, added_by=user)


def stored_kernel_for(args: list) -> CustomKernel | None:
    """The custom kernel staff added whose args these are, or None."""
    task_name, args_json = Workload.key_of(CUSTOM_TEMPLATE, args)
    return CustomKernel.objects.filter(workload__task_name=task_name, workload__args_json=args_json).first()


def summarize(kernel: CustomKernel) -> KernelSummary:
    summary = kernel.workload.custom_kernel_summary()
    if summary is None:  # stored kernels passed parse_spec when staff added them
        raise SpecError(f"custom kernel {kernel.name}: its stored spec no longer parses", field="spec")
    return summary
