"""Devices, workloads, measurement records, baselines and the imports they came from."""
from __future__ import annotations

import hashlib
import json
from typing import Any

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import F, Q, Window
from django.db.models.functions import RowNumber

from engine import (MODEL_SLUG, PROVIDERS, BadArgs, ErrorNo, Record, UnknownTemplate, canonical_args, create_task,
                    describe_workload, make_target)

from .custom_specs import KernelSummary, kernel_summary
from .visibility import batches_q, records_q


class Device(models.Model):
    """A GPU model as written in a target's `-model=` (TopHub's `v100`, our `h200`)."""

    model = models.CharField(
        max_length=64, unique=True, help_text="the target's -model= value",
        validators=[RegexValidator(f"^{MODEL_SLUG.pattern}$", "a GPU model is a slug of a-z, 0-9, '.', '_' and '-'")],
    )
    name = models.CharField(max_length=128, blank=True, help_text="marketing name, e.g. NVIDIA H200")
    compute_capability = models.CharField(max_length=8, blank=True)
    sm_count = models.PositiveIntegerField(null=True, blank=True)
    memory_bytes = models.BigIntegerField(null=True, blank=True)
    # What a worker's GPU announces; the roofline's peaks come from them (records.roofline).
    clock_mhz = models.PositiveIntegerField(null=True, blank=True, help_text="peak SM clock")
    memory_clock_mhz = models.PositiveIntegerField(null=True, blank=True, help_text="peak memory clock")
    memory_bus_bits = models.PositiveIntegerField(null=True, blank=True, help_text="global memory bus width")
    driver_version = models.CharField(max_length=32, blank=True)
    cuda_version = models.CharField(max_length=32, blank=True)
    is_replay = models.BooleanField(
        default=False, help_text="answers from a recording, not a live GPU"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["model"]

    def __str__(self) -> str:
        return f"{self.model} (replay)" if self.is_replay else self.model

    @property
    def target(self) -> str:
        return make_target(self.model)


def args_digest(args_json: str) -> str:
    """A workload's identity beside its task name: the sha256 of its canonical args, since
    an index on the args themselves caps their size (PostgreSQL's at about 2.7 KB)."""
    return hashlib.sha256(args_json.encode("utf-8", "surrogatepass")).hexdigest()


BIGINT_MAX = 2**63 - 1
# A plain arg naming one of these is an out_dtype (TVM's conv2d and dense end with one).
OUT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64", "int8", "int32"})


class Catalog:
    """Devices and workloads by their natural keys, created on first sight (a workload with
    the engine's FLOP and byte counts), cached for one import or run: `Workload.objects.catalog()`."""

    def __init__(self) -> None:
        self._devices: dict[str, int] = {}
        self._workloads: dict[tuple[str, str], Workload] = {}
        # repr() of parsed JSON is far cheaper than canonical_args and as exact;
        # it is only a shortcut to the canonical key.
        self._by_repr: dict[tuple[str, str], Workload] = {}

    def device_id(self, model: str) -> int:
        if model not in self._devices:
            self._devices[model] = Device.objects.get_or_create(model=model)[0].pk
        return self._devices[model]

    def workload(self, task_name: str, args: list) -> tuple[Workload, str | None]:
        """The workload and, the first time a FLOP count is missing, a note saying why."""
        quick = (task_name, repr(args))
        if quick in self._by_repr:
            return self._by_repr[quick], None
        key = Workload.key_of(task_name, args)
        note = None
        if key not in self._workloads:
            flops, bytes_moved, note = _counts_or_note(task_name, args)
            workload, created = Workload.objects.get_or_create(
                task_name=key[0], args_digest=args_digest(key[1]),
                defaults={"args_json": key[1], "flops": flops, "bytes_moved": bytes_moved})
            self._workloads[key] = workload
            note = note if created else None
        self._by_repr[quick] = self._workloads[key]
        return self._workloads[key], note


def _counts_or_note(task_name: str, args: list) -> tuple[int | None, int | None, str | None]:
    """FLOPs and bytes as the engine counts them, each None where unknown or too large to
    store, and a note when the FLOPs are missing."""
    facts = describe_workload(task_name, args)
    moved = facts.bytes_moved if facts.bytes_moved is not None and facts.bytes_moved <= BIGINT_MAX else None
    if facts.flops is None:
        return None, moved, f"{facts.note}: imported with time only"
    if facts.flops > BIGINT_MAX:
        return None, moved, f"FLOP count of {task_name} is too large to store: imported with time only"
    return facts.flops, moved, None


class WorkloadManager(models.Manager):
    def catalog(self) -> Catalog:
        return Catalog()


class Workload(models.Model):
    """A task and its arguments, as in a log's `input`: one operator shape."""

    task_name = models.CharField(max_length=128, db_index=True)
    args_json = models.TextField(help_text="canonical JSON of the task's args, whole")
    args_digest = models.CharField(max_length=64, db_index=True, editable=False,
                                   help_text="sha256 of args_json: what tells workloads apart")
    flops = models.BigIntegerField(null=True, blank=True, help_text="floating-point operations of one run")
    bytes_moved = models.BigIntegerField(
        null=True, blank=True, help_text="bytes one run must read and write at the least (memory-bound templates)")
    created_at = models.DateTimeField(auto_now_add=True)

    objects = WorkloadManager()

    class Meta:
        ordering = ["task_name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["task_name", "args_digest"], name="unique_workload_digest"),
        ]

    def __str__(self) -> str:
        return f"{self.task_name} {self.shape_summary}"

    def save(self, *args, **kwargs) -> None:
        self.args_digest = args_digest(self.args_json)
        super().save(*args, **kwargs)

    @property
    def args(self) -> list:
        return json.loads(self.args_json)

    @property
    def shape_summary(self) -> str:
        """Tensor shapes then plain args, e.g. `[1,512,7,7] [512,512,3,3] [1,1] ...`, then the
        tensors' dtype where it is not float32 (`[16,4096] [4096,4096] bfloat16`), and after it an
        out_dtype the args name (`[16,4096] [4096,4096] bfloat16 → bfloat16`: a 16-bit C): precision
        is part of the workload, and pages show it (a TF32 workload says `tf32` among its args)."""
        parts, dtypes, outs = [], [], []
        for arg in self.args:
            # Any JSON list imports, so a "TENSOR" entry may not hold a shape list.
            if isinstance(arg, list) and len(arg) == 3 and arg[0] == "TENSOR" and isinstance(arg[1], list):
                parts.append("[" + ",".join(str(d) for d in arg[1]) + "]")
                if arg[2] != "float32" and str(arg[2]) not in dtypes:
                    dtypes.append(str(arg[2]))
            elif isinstance(arg, str) and arg in OUT_DTYPES:
                outs.append(arg)
            elif isinstance(arg, list):
                parts.append("[" + ",".join(str(d) for d in arg) + "]")
            elif isinstance(arg, dict) and "kernel_name" in arg:
                # A custom kernel's spec holds its whole source: name the kernel instead.
                parts.append(f"kernel {arg['kernel_name']}")
            else:
                parts.append(str(arg))
        if not dtypes:  # float32 tensors: an out_dtype reads as the plain arg it is (`... [1,1] float32`)
            return " ".join(parts + outs)
        return " ".join(parts + dtypes + [f"→ {d}" for d in outs])

    def knob_defaults(self) -> dict[str, Any]:
        """What a record of this workload that lacks a knob ran with: the defaults of knobs the
        template gained after such records were logged (empty where the engine has no space)."""
        try:
            return create_task(self.task_name, self.args).config_space.knob_defaults()
        except (BadArgs, UnknownTemplate):
            return {}

    def custom_kernel_summary(self) -> KernelSummary | None:
        """The kernel spec of a `custom` workload, for its pages; None for other tasks."""
        return kernel_summary(self.task_name, self.args)

    def same_shape(self):
        """Other tasks' workloads with exactly these args: TopHub tuned C12 only as
        `conv2d_nchw_winograd.cuda`, so its direct-convolution leaderboard points there."""
        return Workload.objects.filter(args_digest=self.args_digest).exclude(pk=self.pk).order_by("task_name")

    def gflops(self, seconds: float | None) -> float | None:
        if not self.flops or not seconds:
            return None
        return self.flops / seconds / 1e9

    @classmethod
    def key_of(cls, task_name: str, args: list) -> tuple[str, str]:
        return task_name, canonical_args(args)

    @classmethod
    def find(cls, task_name: str, args: list) -> "Workload | None":
        """The stored workload of this task and args, or None."""
        return cls.objects.filter(task_name=task_name, args_digest=args_digest(canonical_args(args))).first()


class ImportBatchQuerySet(models.QuerySet):
    def visible_to(self, viewer) -> "ImportBatchQuerySet":
        return self.filter(batches_q(viewer))


class ImportBatch(models.Model):
    """One file brought in (upload, command line or a tuning job) and what became of it."""

    class Source(models.TextChoices):
        UPLOAD = "upload", "upload"
        COMMAND = "command", "command line"
        ENGINE = "engine", "tuning job"
        CONFIRMATION = "confirmation", "confirmation"

    class Kind(models.TextChoices):
        RECORDS = "records", "tuning records"
        BASELINES = "baselines", "baselines"

    file_name = models.CharField(max_length=255)
    sha256 = models.CharField(max_length=64, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.COMMAND)
    kind = models.CharField(
        max_length=16, choices=Kind.choices, default=Kind.RECORDS, help_text="what the file held: log records or baselines"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="import_batches"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    lines = models.PositiveIntegerField(default=0)
    imported = models.PositiveIntegerField(default=0)
    duplicates = models.PositiveIntegerField(default=0)
    legacy_skipped = models.PositiveIntegerField(default=0, help_text="version 0.1 lines")
    malformed = models.PositiveIntegerField(default=0)
    problems = models.JSONField(default=list, blank=True, help_text="[{line, reason}], the first few hundred")
    private_to = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+",
        help_text="only this user and staff read this batch and its records (a private tuning job's)",
    )

    objects = ImportBatchQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "import batches"

    def __str__(self) -> str:
        return f"{self.file_name} ({self.imported} new)"

    @property
    def comment_lines(self) -> int:
        """Comments and blank lines: what the other counts leave of the lines read."""
        return self.lines - self.imported - self.duplicates - self.legacy_skipped - self.malformed

    def summary(self) -> str:
        """One line of what became of the file's lines (or baseline rows): the parts add up to the total."""
        if self.kind == self.Kind.BASELINES:
            return f"{self.lines} rows: {self.imported} baselines saved, {len(self.problems)} problems"
        return (f"{self.lines} lines: {self.imported} imported, {self.duplicates} duplicates, "
                f"{self.legacy_skipped} version 0.1 skipped, {self.malformed} malformed, "
                f"{self.comment_lines} comments or blank")

    def as_dict(self) -> dict:
        """The batch as the import API answers it."""
        if self.kind == self.Kind.BASELINES:
            return {"batch": self.pk, "file_name": self.file_name, "rows": self.lines, "saved": self.imported,
                    "problems": self.problems}
        return {"batch": self.pk, "file_name": self.file_name, "lines": self.lines, "imported": self.imported,
                "duplicates": self.duplicates, "legacy_skipped": self.legacy_skipped, "malformed": self.malformed,
                "problems": self.problems}


# AutoTVM's best rule: the valid record (error-free, timed) of lowest mean cost; a tie keeps
# the earlier measurement. Every page, API endpoint and download that speaks of "valid",
# "ranked" or "the best" asks the queryset below, and nothing else spells the rule.
BEST_ORDER = ("mean_cost", "timestamp", "id")


def valid_filter(prefix: str = "") -> Q:
    """The valid-record condition, on records reached through `prefix` (`records__` from a workload)."""
    return Q(**{f"{prefix}error_no": ErrorNo.NO_ERROR, f"{prefix}mean_cost__isnull": False})


class RecordQuerySet(models.QuerySet):
    def visible_to(self, viewer) -> "RecordQuerySet":
        """The records `viewer` may read (records.visibility)."""
        return self.filter(records_q(viewer))

    def valid(self) -> "RecordQuerySet":
        return self.filter(valid_filter())

    def ranked(self) -> "RecordQuerySet":
        """Fastest first; records without a time (errors) last, in the best rule's tie order."""
        return self.order_by(F("mean_cost").asc(nulls_last=True), *BEST_ORDER[1:])

    def best(self) -> "MeasurementRecord | None":
        """The single best record of these (one workload's on one GPU, typically)."""
        return self.valid().order_by(*BEST_ORDER).select_related("workload", "device").first()

    def best_per_gpu(self) -> "RecordQuerySet":
        """The best record of each (workload, device) among these."""
        # Rank only the narrow indexed columns, then fetch the winners by key: ranking whole
        # rows (with their joins) made PostgreSQL sort every candidate row on disk.
        winners = (
            self.valid()
            .annotate(rank=Window(RowNumber(), partition_by=[F("workload_id"), F("device_id")],
                                  order_by=[F(name).asc() for name in BEST_ORDER]))
            .filter(rank=1)
            .values("pk")
        )
        return (
            MeasurementRecord.objects.filter(pk__in=winners)
            .select_related("workload", "device")
            .order_by("workload_id", "mean_cost")
        )


# What a measurement's environment may hold: the GPU board and software that timed it
# (`environment` of records and baselines; the records page filters and groups by these).
ENVIRONMENT_KEYS = ("gpu_uuid", "gpu_name", "driver", "cuda_runtime", "nvrtc", "cupy", "sm_clock_mhz",
                    "library", "library_version", "algorithm")


class MeasurementRecord(models.Model):
    """One measured config of a workload on a device: one line of an AutoTVM log.

    A confirmation (kind) is a re-measurement by the confirmation protocol: its costs are
    one value per interleaved round, warm or cold (L2 flushed before each launch)."""

    class Kind(models.TextChoices):
        TUNING = "tuning", "tuning measurement"
        CONFIRMATION = "confirmation", "confirmation"

    class Cache(models.TextChoices):
        WARM = "warm", "warm (inputs in L2)"
        COLD = "cold", "cold (L2 flushed)"

    objects = RecordQuerySet.as_manager()

    device = models.ForeignKey(Device, on_delete=models.CASCADE, related_name="records")
    workload = models.ForeignKey(Workload, on_delete=models.CASCADE, related_name="records")
    target = models.CharField(max_length=255, help_text="full target string of the log line")
    config_index = models.BigIntegerField()
    entity = models.JSONField(help_text="[[knob, kind, value], ...]")
    costs = models.JSONField(default=list, help_text="seconds per run; empty on error")
    mean_cost = models.FloatField(null=True, blank=True, help_text="seconds; null on error")
    gflops = models.FloatField(null=True, blank=True)
    error_no = models.PositiveSmallIntegerField(choices=[(e.value, e.label) for e in ErrorNo], default=0)
    error_msg = models.TextField(blank=True)
    all_cost = models.FloatField(default=0.0, help_text="seconds spent on the whole measurement")
    timestamp = models.FloatField(help_text="unix time of the measurement")
    tvm_version = models.CharField(max_length=64, blank=True, help_text="producer that wrote the line")
    code_hash = models.CharField(max_length=128, null=True, blank=True)
    kwargs = models.JSONField(default=dict, blank=True)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.TUNING)
    cache = models.CharField(max_length=8, choices=Cache.choices, default=Cache.WARM)
    rounds = models.PositiveSmallIntegerField(null=True, blank=True, help_text="confirmations: interleaved rounds")
    environment = models.JSONField(default=dict, blank=True, help_text="GPU board, driver, runtime, NVRTC, CuPy, SM clock")
    batch = models.ForeignKey(ImportBatch, null=True, blank=True, on_delete=models.SET_NULL, related_name="records")
    fingerprint = models.CharField(max_length=64, unique=True, help_text="sha256 of the canonical log line")

    class Meta:
        ordering = ["mean_cost", "timestamp", "id"]
        indexes = [
            models.Index(
                fields=["workload", "device", "mean_cost", "timestamp", "id"],
                name="record_best_idx",
                condition=models.Q(error_no=0),
            ),
            models.Index(fields=["device", "workload"], name="record_device_workload_idx"),
            # A workload's records ranked fastest first across GPUs (the leaderboard's table):
            # an ordered index scan with LIMIT instead of sorting every record of the workload.
            models.Index(
                fields=["workload", "mean_cost", "timestamp", "id"],
                name="record_rank_idx",
                condition=models.Q(error_no=0),
            ),
            # A workload's (GPU, config, code hash) groups as an index-only scan (the leaderboard's one
            # aggregate), and all measurements of one config (a row's median); a workload's confirmations.
            models.Index(
                fields=["workload", "device", "config_index", "code_hash", "mean_cost"],
                name="record_config_idx",
                condition=models.Q(error_no=0, cache="warm"),
            ),
            models.Index(fields=["workload", "device"], name="record_confirmation_idx",
                         condition=models.Q(kind="confirmation")),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.workload.task_name} on {self.device.model} idx {self.config_index}"

    @property
    def ok(self) -> bool:
        """Valid: error-free and timed (the rule `RecordQuerySet.valid` asks the database)."""
        return self.error_no == ErrorNo.NO_ERROR and self.mean_cost is not None

    @property
    def error(self) -> ErrorNo:
        return ErrorNo(self.error_no)

    @property
    def knobs(self) -> dict:
        """Knob name to value, in definition order."""
        return {name: value for name, _kind, value in self.entity}

    @property
    def is_confirmation(self) -> bool:
        return self.kind == self.Kind.CONFIRMATION

    def to_record(self) -> Record:
        """The engine's view of this row, for writing it back as a log line."""
        return Record(
            target=self.target,
            task_name=self.workload.task_name,
            args=self.workload.args,
            kwargs=self.kwargs,
            config_index=self.config_index,
            entity=self.entity,
            costs=tuple(self.costs),
            error_no=ErrorNo(self.error_no),
            all_cost=self.all_cost,
            timestamp=self.timestamp,
            tvm_version=self.tvm_version,
            error_msg=self.error_msg,
            code_hash=self.code_hash,
        )


class Baseline(models.Model):
    """A reference time for a workload on a device: a vendor library or the untuned default."""

    # The engine names the providers (engine/baselines.py): CUDNN, CUBLAS, DEFAULT_CONFIG, OTHER.
    Provider = models.TextChoices(
        "Provider", [(value.upper().replace("-", "_"), (value, label)) for value, label in PROVIDERS.items()])

    workload = models.ForeignKey(Workload, on_delete=models.CASCADE, related_name="baselines")
    device = models.ForeignKey(Device, on_delete=models.CASCADE, related_name="baselines")
    provider = models.CharField(max_length=32, choices=Provider.choices)
    cost = models.FloatField(help_text="seconds per run")
    note = models.CharField(max_length=255, blank=True, help_text="library version, settings")
    costs = models.JSONField(default=list, blank=True, help_text="confirmations: warm seconds, one per round")
    cold_cost = models.FloatField(null=True, blank=True, help_text="median seconds with L2 flushed before each run")
    cold_costs = models.JSONField(default=list, blank=True, help_text="confirmations: cold seconds, one per round")
    rounds = models.PositiveSmallIntegerField(null=True, blank=True, help_text="interleaved rounds it rests on")
    environment = models.JSONField(default=dict, blank=True, help_text="library, version, algorithm; GPU board")
    batch = models.ForeignKey(ImportBatch, null=True, blank=True, on_delete=models.SET_NULL, related_name="baselines")
    measured_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["workload", "device", "provider"]
        constraints = [
            models.UniqueConstraint(fields=["workload", "device", "provider"], name="unique_baseline"),
        ]

    def __str__(self) -> str:
        return f"{self.provider} {self.cost * 1e6:.1f} us on {self.device.model}"
