"""Tuning jobs, their per-GPU runs, and the workers that run them.

A Job is what a person asked for (workload, tuner, budget, GPU models); a JobRun is
that job on one GPU model, run by one worker at a time. Its records live in the
records app, in the ImportBatch the run owns, so leaderboards, diffs and downloads
see them like any imported log.

A job's `kind` says what it tunes: one workload (`tune`), or a network's tasks
(`network`, jobs.network): then the job holds NetworkTasks, and each task has a run
per GPU model, given trials a round at a time by the task scheduler.
"""
from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models, transaction
from django.db.models import Count, Max, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.urls import reverse
from django.utils import timezone

from records.models import Device, ImportBatch, MeasurementRecord, Workload


def stale_before():
    """Heartbeats older than this mean the process that sent them is gone."""
    return timezone.now() - timedelta(seconds=settings.TUNERWEB_WORKER_STALE_SECONDS)


class State(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    DONE = "done", "done"
    FAILED = "failed", "failed"
    CANCELLED = "cancelled", "cancelled"
    # A network task's run that finished its round and waits for the scheduler's next.
    BETWEEN_ROUNDS = "between_rounds", "between rounds"


ACTIVE_STATES = (State.QUEUED, State.RUNNING, State.BETWEEN_ROUNDS)
IDEMPOTENCY_KEY_CHARS = 128


class JobQuerySet(models.QuerySet):
    def visible_to(self, user) -> "JobQuerySet":
        """Staff see every job; others only their own."""
        if user.is_staff:
            return self
        return self.filter(owner=user)


class JobKind(models.TextChoices):
    TUNE = "tune", "tune"
    REMEASURE = "remeasure", "re-measure"
    NETWORK = "network", "network"


class Job(models.Model):
    """A tuning job (then its top-k confirmed), a re-measure job (configs from an import batch
    or a leaderboard's top-k, measured by the confirmation protocol), or a network job (its
    tasks share one budget, jobs.network)."""

    class Allocation(models.TextChoices):
        # The values are engine.scheduler.Strategy's.
        GRADIENT = "gradient", "by expected gain (Ansor's gradient)"
        ROUND_ROBIN = "round_robin", "round-robin"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tuning_jobs")
    kind = models.CharField(max_length=16, choices=JobKind.choices, default=JobKind.TUNE)
    workload = models.ForeignKey(
        Workload, null=True, blank=True, on_delete=models.PROTECT, related_name="jobs", help_text="not network jobs"
    )
    preset = models.CharField(max_length=32, blank=True, help_text="workload or network preset name, if one was picked")
    tuner = models.CharField(max_length=32)
    n_trial = models.PositiveIntegerField(help_text="trial budget per GPU (a network job's, shared by its tasks)")
    allocation = models.CharField(max_length=16, choices=Allocation.choices, blank=True, help_text="network jobs only")
    round_trials = models.PositiveIntegerField(null=True, blank=True, help_text="network jobs: trials per round")
    early_stopping = models.PositiveIntegerField(
        null=True, blank=True, help_text="stop after this many trials without a better config"
    )
    seed = models.BigIntegerField(null=True, blank=True)
    private = models.BooleanField(
        default=False, help_text="its records (leaderboards, downloads, imports) are read only by its owner and staff",
    )
    idempotency_key = models.CharField(
        max_length=IDEMPOTENCY_KEY_CHARS, blank=True,
        help_text="the client's Idempotency-Key: a retry with the same key returns this job instead of a new one",
    )
    top_k = models.PositiveSmallIntegerField(
        default=5, help_text="distinct configs confirmed after tuning (0: none), or re-measured from a leaderboard"
    )
    rounds = models.PositiveSmallIntegerField(default=5, help_text="interleaved confirmation rounds")
    from_batch = models.ForeignKey(
        ImportBatch, null=True, blank=True, on_delete=models.SET_NULL, related_name="remeasure_jobs",
        help_text="re-measure: the best configs of this workload in this import",
    )
    from_device = models.ForeignKey(
        Device, null=True, blank=True, on_delete=models.SET_NULL, related_name="remeasure_jobs",
        help_text="re-measure: the top-k configs of this GPU's leaderboard",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "idempotency_key"], condition=~models.Q(idempotency_key=""),
                name="one_job_per_idempotency_key",
            ),
        ]

    def __str__(self) -> str:
        if self.kind == JobKind.REMEASURE:
            return f"job {self.pk}: re-measure {self.workload.task_name} ({self.source_label})"
        what = self.workload.task_name if self.workload_id else f"network {self.preset or 'of listed tasks'}"
        return f"job {self.pk}: {what} ({self.tuner}, {self.n_trial} trials)"

    @property
    def is_remeasure(self) -> bool:
        return self.kind == JobKind.REMEASURE

    @property
    def source_label(self) -> str:
        """What a re-measure job measures, in words."""
        if self.from_batch_id:
            return f"the bests of import {self.from_batch_id}"
        if self.from_device_id:
            return f"the top {self.top_k} of {self.from_device.model}'s leaderboard"
        return ""

    def get_absolute_url(self) -> str:
        if self.kind == JobKind.NETWORK:
            return reverse("jobs:network_detail", args=[self.pk])
        return reverse("jobs:detail", args=[self.pk])

    @property
    def state(self) -> str:
        return self.state_of(self.runs.all())

    @staticmethod
    def state_expression():
        """`state_of` in SQL, for sorting a list of jobs by state before paginating it."""
        def having(*states):
            return models.Exists(JobRun.objects.filter(job=OuterRef("pk"), state__in=states))

        return models.Case(
            models.When(having(State.RUNNING, State.BETWEEN_ROUNDS), then=models.Value(State.RUNNING)),
            models.When(having(State.QUEUED), then=models.Value(State.QUEUED)),
            models.When(~models.Exists(JobRun.objects.filter(job=OuterRef("pk")).exclude(state=State.DONE)),
                        then=models.Value(State.DONE)),
            models.When(having(State.FAILED), then=models.Value(State.FAILED)),
            default=models.Value(State.CANCELLED), output_field=models.CharField(),
        )

    @staticmethod
    def state_of(runs) -> str:
        """One state for the whole job from its runs' states (`state_expression` says it in SQL)."""
        states = {run.state for run in runs}
        if State.RUNNING in states:
            return State.RUNNING
        if State.QUEUED in states:
            return State.QUEUED
        if State.BETWEEN_ROUNDS in states:  # only for a moment: a finished round gives the next
            return State.RUNNING
        if states <= {State.DONE}:
            return State.DONE
        if State.FAILED in states:
            return State.FAILED
        return State.CANCELLED

    @property
    def devices(self) -> list:
        """The GPU models it runs on, each once (a network job has a run per task on each)."""
        return list({run.device_id: run.device for run in self.runs.all()}.values())

    @property
    def is_active(self) -> bool:
        return self.state in ACTIVE_STATES

    def cancel(self, by) -> int:
        """Cancel the runs not yet finished; a running one stops after its current batch.
        The job's row is locked meanwhile, so a network job's scheduler (which locks it
        too) never gives a round after a cancel it did not see."""
        with transaction.atomic():
            Job.objects.select_for_update().filter(pk=self.pk).first()
            return self.runs.filter(state__in=ACTIVE_STATES).update(
                state=State.CANCELLED, finished_at=timezone.now(), message=f"cancelled by {by}"
            )


class NetworkTask(models.Model):
    """One task of a network job: a workload and how many times the network runs it."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="tasks")
    position = models.PositiveSmallIntegerField()
    label = models.CharField(max_length=32, help_text="C1, D7, ffn-up, or the user's name for it")
    workload = models.ForeignKey(Workload, on_delete=models.PROTECT, related_name="network_tasks")
    weight = models.PositiveIntegerField(help_text="occurrences in the network")

    class Meta:
        ordering = ["job_id", "position"]
        constraints = [models.UniqueConstraint(fields=["job", "position"], name="one_task_per_position")]

    def __str__(self) -> str:
        return f"{self.label} ×{self.weight} of job {self.job_id}"


class WorkerQuerySet(models.QuerySet):
    def online(self) -> "WorkerQuerySet":
        return self.filter(last_heartbeat__gte=stale_before())

    def last_heartbeat_of(self, queue) -> "WorkerQuerySet":
        """The last heartbeat of any worker of `queue` (a name or an OuterRef), as a one-value query."""
        return self.filter(queue=queue).order_by().values("queue").annotate(seen=Max("last_heartbeat")).values("seen")

    def last_seen(self, queue: str):
        """The last heartbeat of any worker of `queue`, or None if none ever beat."""
        row = self.last_heartbeat_of(queue).first()
        return row["seen"] if row else None


class Worker(models.Model):
    """One worker process serving one GPU (or one replay recording) from one queue."""

    name = models.CharField(max_length=200, unique=True, help_text="queue@host:gpu, stable across restarts")
    hostname = models.CharField(max_length=200)
    pid = models.PositiveIntegerField(null=True, blank=True)
    queue = models.SlugField(max_length=64, help_text="Celery queue: the GPU model")
    device = models.ForeignKey(Device, on_delete=models.CASCADE, related_name="workers")
    gpu_index = models.PositiveSmallIntegerField(null=True, blank=True)
    is_replay = models.BooleanField(default=False)
    recording = models.CharField(max_length=255, blank=True, help_text="replay recording file")
    device_info = models.JSONField(default=dict, blank=True)
    workloads = models.JSONField(
        default=list, blank=True, help_text="replay only: [task_name, canonical args] it can answer for"
    )
    started_at = models.DateTimeField(default=timezone.now)
    last_heartbeat = models.DateTimeField(null=True, blank=True)

    objects = WorkerQuerySet.as_manager()

    class Meta:
        ordering = ["queue", "name"]

    def __str__(self) -> str:
        return f"{self.name} (replay)" if self.is_replay else self.name

    @property
    def recording_name(self) -> str:
        """The recording's file name: pages show no server paths."""
        return self.recording.rsplit("/", 1)[-1]

    def serves(self, task_name: str, args: list) -> bool:
        """A GPU measures any workload; a replay worker only those in its recording."""
        return not self.is_replay or [*Workload.key_of(task_name, args)] in self.workloads

    @property
    def online(self) -> bool:
        return self.last_heartbeat is not None and self.last_heartbeat >= stale_before()

    @property
    def current_run(self) -> "JobRun | None":
        return self.runs.filter(state=State.RUNNING).select_related("job").first()

    @property
    def status(self) -> str:
        if not self.online:
            return "offline"
        return "busy" if self.current_run else "idle"


class JobRunQuerySet(models.QuerySet):
    def with_figures(self) -> "JobRunQuerySet":
        """Runs with what their headline figures read, in this one query: the GPU, the
        best record, and the records counted (a list of runs then reads no more), with the
        newest one's id (with the count, it names the state of the run's records)."""
        # Subqueries on the batch index: a join grouped by every selected column sorted each
        # run's records at full row width.
        of_batch = MeasurementRecord.objects.filter(batch_id=OuterRef("batch_id")).order_by().values("batch_id")
        return self.select_related("device", "best_record").annotate(
            record_count=Coalesce(Subquery(of_batch.annotate(n=Count("id")).values("n")), 0),
            last_record_id=Subquery(of_batch.annotate(last=Max("id")).values("last")),
        )

    def with_worker_seen(self) -> "JobRunQuerySet":
        """Runs with the last heartbeat of any worker of their GPU model, in this one query:
        `waiting_for_worker` then reads no more (a job page asks it of every run, each request)."""
        return self.annotate(worker_last_seen=Subquery(Worker.objects.last_heartbeat_of(OuterRef("device__model"))))

    def waiting_for_workers(self) -> list[tuple["JobRun", str]]:
        """Active runs waiting for a worker of their GPU model, with what they wait for."""
        active = self.filter(state__in=ACTIVE_STATES).select_related("device", "job").with_worker_seen()
        found = ((run, run.waiting_for_worker()) for run in active)
        return [(run, waiting) for run, waiting in found if waiting]


class JobRun(models.Model):
    """A job on one GPU model: the unit a worker claims, runs and reports on.

    Its figures are read from its records, not stored beside them: the worker keeps
    only `best_record` up to date; trials done and failures are counted when asked.
    """

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="runs")
    device = models.ForeignKey(Device, on_delete=models.PROTECT, related_name="job_runs")
    task = models.ForeignKey(
        NetworkTask, null=True, blank=True, on_delete=models.CASCADE, related_name="runs", help_text="network jobs only"
    )
    trials_allotted = models.PositiveIntegerField(
        null=True, blank=True, help_text="network jobs: trials the scheduler gave this task so far"
    )
    exhausted = models.BooleanField(default=False, help_text="every config of its space was measured")
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED, db_index=True)
    message = models.TextField(blank=True, help_text="why it stopped, or what went wrong")
    batch = models.OneToOneField(
        ImportBatch, null=True, blank=True, on_delete=models.SET_NULL, related_name="job_run",
        help_text="the records this run measured",
    )
    confirmation_batch = models.OneToOneField(
        ImportBatch, null=True, blank=True, on_delete=models.SET_NULL, related_name="confirming_run",
        help_text="the confirmations this run measured",
    )
    best_record = models.ForeignKey(
        MeasurementRecord, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    worker = models.ForeignKey(Worker, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    claim_token = models.UUIDField(null=True, blank=True, help_text="changes with every claim")
    attempts = models.PositiveIntegerField(default=0, help_text="times a worker claimed it")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    enqueued_at = models.DateTimeField(null=True, blank=True, help_text="last time a message reached the broker")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = JobRunQuerySet.as_manager()

    class Meta:
        ordering = ["job_id", "device__model"]
        constraints = [
            models.UniqueConstraint(
                fields=["job", "device"], condition=models.Q(task__isnull=True), name="one_run_per_job_and_gpu"
            ),
            models.UniqueConstraint(fields=["job", "device", "task"], name="one_run_per_task_and_gpu"),
        ]

    def __str__(self) -> str:
        task = f" task {self.task.label}" if self.task_id else ""
        return f"job {self.job_id}{task} on {self.device}"

    @property
    def queue(self) -> str:
        return self.device.model

    @property
    def workload(self) -> Workload:
        """What this run tunes: its network task's workload, or the job's."""
        return self.task.workload if self.task_id else self.job.workload

    @property
    def trials_planned(self) -> int:
        return self.job.n_trial if self.trials_allotted is None else self.trials_allotted

    @property
    def trials_done(self) -> int:
        """Trials measured and stored; `with_figures` counted them already."""
        if hasattr(self, "record_count"):
            return self.record_count
        return self.records().count()

    @property
    def best_cost(self) -> float | None:
        """Seconds, of the best record (select_related("best_record") spares a query)."""
        return self.best_record.mean_cost if self.best_record else None

    @property
    def best_gflops(self) -> float | None:
        return self.best_record.gflops if self.best_record else None

    @property
    def settled(self) -> bool:
        """No worker will store another trial: finished, and its worker let go of the claim
        (a cancel ends the run at once, but its worker still stores the batch in hand) or went silent."""
        if self.state in ACTIVE_STATES:
            return False
        if self.state != State.CANCELLED or self.claim_token is None:
            return True
        return self.heartbeat_at is None or self.heartbeat_at < stale_before()

    def waiting_for_worker(self) -> str | None:
        """What an active run waits for when no worker of its GPU model has been online for
        longer than TUNERWEB_WORKER_WAIT_SECONDS (without it a run under a worker that died
        reads "running" for ever); None while one is online, or the wait is still short."""
        if self.state not in ACTIVE_STATES:
            return None
        # Fetched `with_worker_seen()`, the run has it already (None too: no worker ever beat).
        seen = self.__dict__["worker_last_seen"] if "worker_last_seen" in self.__dict__ else Worker.objects.last_seen(self.queue)
        if seen is not None and seen >= stale_before():
            return None
        since = seen or self.job.created_at
        if timezone.now() - since <= timedelta(seconds=settings.TUNERWEB_WORKER_WAIT_SECONDS):
            return None
        if seen is None:
            return f"waiting for a worker of model {self.queue}; none has been online"
        return f"waiting for a worker of model {self.queue}; none online since {seen:%Y-%m-%d %H:%M:%S} UTC"

    def records(self):
        """This run's measurements, in the order they were stored."""
        if self.batch_id is None:
            return MeasurementRecord.objects.none()
        return MeasurementRecord.objects.filter(batch_id=self.batch_id).order_by("id")

    def best(self) -> MeasurementRecord | None:
        return self.records().best()

    def confirmations(self):
        """The confirmation records this run measured (warm and cold)."""
        if self.confirmation_batch_id is None:
            return MeasurementRecord.objects.none()
        return MeasurementRecord.objects.filter(batch_id=self.confirmation_batch_id).order_by("id")


class CustomKernel(models.Model):
    """A user's own CUDA kernel that staff added: a name for the `custom` workload whose
    args hold its spec. Custom jobs run only these, so a GPU worker compiles only
    source that staff accepted (a log import can create a `custom` workload too)."""

    name = models.CharField(max_length=100, unique=True)
    workload = models.OneToOneField(Workload, on_delete=models.PROTECT, related_name="custom_kernel")
    added_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("jobs:custom_kernel", args=[self.pk])
