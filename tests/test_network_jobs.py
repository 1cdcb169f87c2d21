"""Network jobs in-process: the request rules, the rounds the scheduler gives, resume and
cancel per task, the job page and the network's best log. The tuning glue runs here
without Celery (real Celery workers: test_network_worker_process.py)."""
import gzip

import pytest
from django.db.models import Q
from django.utils import timezone

from engine import create_task
from engine.networks import NETWORKS
from engine.logfile import read_records, write_records
from engine.scheduler import Strategy, TaskView, bests_per_round, next_task
from engine.synthetic import synthetic_recording
from jobs.claims import claim
from jobs.models import Job, JobKind, JobRun, State, Worker, stale_before
from jobs.network import check_network_request, submit_network_job
from jobs.recording import RunRecorder
from jobs.running import run_claimed
from jobs.worker import measurer_for, register, replay_config
from jobs_fixtures import recording_path, redis_url, resnet18_recording  # noqa: F401
from records.models import Baseline, Device, Workload

pytestmark = pytest.mark.django_db
H200_REPLAY = "h200-replay"


@pytest.fixture(autouse=True)
def broker(redis_url):
    """Rounds given at submission go to a Redis database of the tests' own (nothing consumes them)."""
    return redis_url


def key_of(workload: Workload) -> tuple:
    return Workload.key_of(workload.task_name, workload.args)


@pytest.fixture
def config(resnet18_recording):
    return replay_config(resnet18_recording)


@pytest.fixture
def worker(config):
    return register(config)


def more_workers(worker, count: int) -> list[Worker]:
    """Rows of other online workers of the same GPU model (not processes: nothing runs them)."""
    return [
        Worker.objects.create(name=f"{worker.queue}@host{i}:replay", hostname=f"host{i}", queue=worker.queue,
                              device=worker.device, is_replay=True, last_heartbeat=timezone.now())
        for i in range(count)
    ]


def submit(user, django_capture_on_commit_callbacks, **fields):
    request = check_network_request(**{"tuner": "grid", "gpus": [H200_REPLAY], **fields})
    with django_capture_on_commit_callbacks(execute=True):
        return submit_network_job(user, request).job


def drive(job, worker, config, rounds: int | None = None) -> int:
    """Run queued rounds (and rounds of silent workers, as requeue_orphans re-sends them)
    one after another, as one worker would; how many ran."""
    ran = 0
    claimable = Q(state=State.QUEUED) | Q(state=State.RUNNING, heartbeat_at__lt=stale_before())
    while rounds is None or ran < rounds:
        run = JobRun.objects.filter(claimable, job=job).order_by("task__position").first()
        if run is None:
            return ran
        token = claim(run.pk, worker)
        assert token is not None
        run_claimed(run.pk, token, config)
        ran += 1
    return ran


def task_costs(job) -> dict[str, list]:
    return {
        run.task.label: list(run.records().values_list("mean_cost", flat=True))
        for run in job.runs.select_related("task")
    }


def test_a_network_preset_or_a_task_list_is_checked_field_by_field(worker, alice_client):
    def post(**body):
        response = alice_client.post("/api/network-jobs/", {"tuner": "grid", "n_trial": 100, "gpus": [H200_REPLAY], **body},
                                     content_type="application/json")
        assert response.status_code == 400, response.content
        return response.json()

    assert "known networks: resnet18" in post(network="resnet-50")["network"][0]
    assert "not both" in post(network="resnet18", tasks=[{"template": "gemm", "preset": "G1"}])["tasks"][0]
    assert "pick a network preset" in post()["tasks"][0]
    assert "task 2: weight" in post(tasks=[{"template": "conv2d_nchw.cuda", "preset": "C1"},
                                           {"template": "conv2d_nchw.cuda", "preset": "C2", "weight": 0}])["tasks"][0]
    assert "task 1: unknown template" in post(tasks=[{"template": "conv3d", "args": [1]}])["tasks"][0]
    assert "unknown field(s) occurrences" in post(tasks=[{"template": "gemm", "preset": "G1", "occurrences": 2}])["tasks"][0]
    assert "listed twice" in post(tasks=[{"template": "conv2d_nchw.cuda", "preset": "C1"},
                                         {"template": "conv2d_nchw.cuda", "preset": "C1", "label": "again"}])["tasks"][0]
    body = post(network="resnet18", allocation="greedy", round_trials=0)
    assert "gradient, round_robin" in body["allocation"][0] and "per round" in body["round_trials"][0]
    assert "no GPU of model 'a100'" in post(network="resnet18", gpus=["a100"])["gpus"][0]
    assert "replay device" in post(network="mobilenet")["gpus"][0]


@pytest.mark.parametrize("tasks", [
    [{"template": "gemm", "args": {"M": 1}}], [{"template": "gemm", "args": "[["}], [{"template": None}],
    [{"template": "gemm", "args": [["TENSOR", [0, 4], "float32"], ["TENSOR", [4, 4], "float32"]]}],
    [{"template": "gemm", "preset": "G1", "weight": True}], [{"template": "gemm", "preset": "G1", "label": 5}],
    [{"template": "custom", "args": [{"kernel_name": "x"}]}], [[1, 2]], ["C1"], {"C1": 1}, "C1", [{}],
])
def test_hostile_task_lists_get_a_json_reason_never_a_crash(alice_client, tasks):
    response = alice_client.post("/api/network-jobs/", {"tasks": tasks, "n_trial": 10, "gpus": [H200_REPLAY]},
                                 content_type="application/json")
    assert response.status_code == 400 and response["Content-Type"] == "application/json"
    assert response.json()["tasks"][0]
    assert not Job.objects.exists()


def test_a_task_named_by_its_preset_alone_takes_the_presets_template(worker):
    request = check_network_request(tasks=[{"preset": "C2", "weight": 4}], tuner="grid", n_trial=8, gpus=[H200_REPLAY])
    assert [(t.label, t.task_name, t.weight) for t in request.tasks] == [("C2", "conv2d_nchw.cuda", 4)]


def test_rounds_go_to_every_online_worker_one_task_each(alice, worker, redis_url, django_capture_on_commit_callbacks):
    more_workers(worker, 2)
    job = submit(alice, django_capture_on_commit_callbacks, network="resnet18", n_trial=240, round_trials=8)

    assert job.kind == JobKind.NETWORK and job.tasks.count() == 12 and job.runs.count() == 12
    queued = job.runs.filter(state=State.QUEUED).select_related("task")
    assert [run.task.label for run in queued] == ["C1", "C2", "C3"]
    assert all(run.trials_allotted == 8 and run.enqueued_at is not None for run in queued)
    assert set(job.runs.exclude(state=State.QUEUED).values_list("trials_allotted", flat=True)) == {0}
    assert job.state == State.QUEUED


def test_the_budget_goes_out_exactly_as_the_scheduler_decides(alice, worker, config, django_capture_on_commit_callbacks):
    job = submit(alice, django_capture_on_commit_callbacks, network="resnet18", n_trial=200, round_trials=8)
    drive(job, worker, config)

    job.refresh_from_db()
    runs = list(job.runs.select_related("task__workload").order_by("task__position"))
    assert job.state == State.DONE and {run.message for run in runs} == {"the budget is spent"}
    assert sum(run.trials_done for run in runs) == 200
    assert all(run.trials_done == run.trials_allotted for run in runs)
    assert all(run.records().values("config_index").distinct().count() == run.trials_done for run in runs)

    # One worker: every decision was made on whole rounds, so the scheduler run again on the
    # stored costs, round by round, must hand out the same rounds.
    costs = [list(run.records().values_list("mean_cost", flat=True)) for run in runs]
    given, left = [0] * len(runs), 200
    while left > 0:
        views = [
            TaskView(weight=run.task.weight, flops=run.task.workload.flops, group=run.task.workload.task_name,
                     bests=bests_per_round(cost[:given[i]], 8))
            for i, (run, cost) in enumerate(zip(runs, costs))
        ]
        chosen = next_task(views, Strategy.GRADIENT)
        size = min(8, left)
        given[chosen] += size
        left -= size
    assert given == [run.trials_allotted for run in runs]
    # The heavy, slow layers got more than the one round of warm-up; C12 (x3) above C1 (x1).
    by_label = {run.task.label: run.trials_allotted for run in runs}
    assert min(by_label.values()) >= 8 and by_label["C12"] > 8


def test_round_robin_gives_every_task_the_same_share(alice, worker, config, django_capture_on_commit_callbacks):
    job = submit(alice, django_capture_on_commit_callbacks, network="resnet18", n_trial=12 * 16 + 4, round_trials=8,
                 allocation="round_robin")
    drive(job, worker, config)

    allotted = list(job.runs.order_by("task__position").values_list("trials_allotted", flat=True))
    assert allotted == [20] + [16] * 11


def test_a_task_whose_space_runs_out_gives_its_trials_back(alice, recording_path, django_capture_on_commit_callbacks):
    config = replay_config(recording_path)  # synthetic C12, 300 configs
    worker = register(config)
    job = submit(alice, django_capture_on_commit_callbacks, tasks=[{"template": "conv2d_nchw.cuda", "preset": "C12",
                 "weight": 3}], n_trial=400, round_trials=128, gpus=[worker.queue])
    drive(job, worker, config)

    run = job.runs.get()
    assert run.state == State.DONE and run.exhausted and run.trials_done == run.trials_allotted == 300
    assert "every config" in run.message and job.state == State.DONE


def test_a_task_that_fails_gives_its_trials_back_and_the_others_go_on(
    alice, recording_path, django_capture_on_commit_callbacks
):
    config = replay_config(recording_path)  # synthetic C12 only
    worker = register(config)
    # The worker row claims C1 too (as another replay worker of the model could), so the job
    # is accepted; this worker's recording then cannot answer for C1.
    c1 = NETWORKS["resnet18"].tasks[0]
    Worker.objects.filter(pk=worker.pk).update(workloads=[*worker.workloads, list(Workload.key_of(c1.task_name, c1.args))])
    job = submit(alice, django_capture_on_commit_callbacks, tasks=[{"preset": "C1"}, {"preset": "C12", "weight": 3}],
                 n_trial=40, round_trials=8, gpus=[worker.queue])
    drive(job, worker, config)

    c1_run, c12_run = job.runs.order_by("task__position")
    assert c1_run.state == State.FAILED and "holds no config" in c1_run.message and c1_run.trials_allotted == 0
    assert c12_run.state == State.DONE and c12_run.trials_done == c12_run.trials_allotted == 40
    assert job.state == State.FAILED


def test_a_cancelled_network_job_gives_no_more_rounds(alice, worker, config, django_capture_on_commit_callbacks):
    job = submit(alice, django_capture_on_commit_callbacks, network="resnet18", n_trial=400, round_trials=8)
    drive(job, worker, config, rounds=3)

    assert job.cancel(by="alice") == 12
    assert drive(job, worker, config) == 0
    assert set(job.runs.values_list("state", flat=True)) == {State.CANCELLED}
    assert sum(run.trials_done for run in job.runs.all()) == 24


def test_a_round_taken_over_from_a_silent_worker_finishes_with_every_trial_once(
    alice, worker, config, django_capture_on_commit_callbacks
):
    job = submit(alice, django_capture_on_commit_callbacks, network="resnet18", n_trial=96, round_trials=8)
    (rescuer,) = more_workers(worker, 1)
    first = job.runs.filter(state=State.QUEUED).first()
    token = claim(first.pk, worker)
    # The worker measured half a round, then died: its heartbeat stops.
    records = [r for r in measurer_for(config).records if r.workload_key == key_of(first.workload)][:4]
    RunRecorder(first, token).store(records)
    JobRun.objects.filter(pk=first.pk).update(heartbeat_at=timezone.now() - timezone.timedelta(hours=1))

    drive(job, rescuer, config)

    first.refresh_from_db()
    assert first.attempts == 2 and first.worker == rescuer and first.trials_done == first.trials_allotted
    assert sum(run.trials_done for run in job.runs.all()) == 96


def test_the_job_page_shows_each_task_and_the_network_estimate_against_the_vendor(
    alice, alice_client, worker, config, django_capture_on_commit_callbacks
):
    job = submit(alice, django_capture_on_commit_callbacks, network="resnet18", n_trial=12 * 8, round_trials=8)
    drive(job, worker, config)
    h200, _ = Device.objects.get_or_create(model="h200")
    cudnn_us = {"C1": 18.0, "C2": 26.4, "C3": 4.5, "C4": 16.0, "C5": 5.4, "C6": 29.1, "C7": 29.0, "C8": 8.2,
                "C9": 55.2, "C10": 55.1, "C11": 8.5, "C12": 107.3}
    for task in job.tasks.all():
        Baseline.objects.create(workload=task.workload, device=h200, provider="cudnn", cost=cudnn_us[task.label] * 1e-6)

    progress = alice_client.get(f"/api/network-jobs/{job.pk}/").json()
    (gpu,) = progress["gpus"]
    rows = {row["label"]: row for row in gpu["tasks"]}
    assert gpu["trials_done"] == 96 and rows["C2"]["weight"] == 4 and rows["C2"]["trials_done"] == 8
    expected = sum(row["best_cost"] * row["weight"] for row in rows.values())
    assert gpu["estimate"] == pytest.approx(expected)
    vendor = sum(cudnn_us[label] * 1e-6 * NETWORKS_WEIGHTS[label] for label in cudnn_us)
    assert gpu["vendor_estimate"] == pytest.approx(vendor) and gpu["speedup"] == pytest.approx(vendor / expected)
    assert sum(row["network_share"] for row in rows.values()) == pytest.approx(1.0)
    timeline = gpu["timeline"]
    assert timeline[-1]["estimate"] == pytest.approx(expected) and timeline[-1]["trials"] == 96
    assert [p["estimate"] for p in timeline] == sorted((p["estimate"] for p in timeline), reverse=True)

    page = alice_client.get(job.get_absolute_url())
    assert page.status_code == 200 and b"network.js" in page.content and b"resnet18" in page.content
    assert alice_client.get(f"/jobs/{job.pk}/").status_code == 404, "a network job has its own page"

    log = b"".join(alice_client.get(progress["download_url"]).streaming_content).decode()
    bests = read_records(log.splitlines())
    assert len(bests) == 12
    assert {r.workload_key: r.mean_cost for r in bests} == pytest.approx(
        {key_of(run.workload): run.best_cost for run in job.runs.select_related("best_record", "task__workload")}
    )


NETWORKS_WEIGHTS = {task.label: task.weight for task in NETWORKS["resnet18"].tasks}


def test_a_synthetic_mobilenet_network_tunes_every_depthwise_layer(alice, tmp_path, django_capture_on_commit_callbacks):
    # No real depthwise recording exists: one synthetic recording per layer, put together.
    path = tmp_path / "mobilenet_synthetic.log.gz"
    with gzip.open(path, "wt", encoding="utf-8") as stream:
        for task in NETWORKS["mobilenet"].tasks:
            write_records(stream, synthetic_recording(create_task(task.task_name, task.args), 40, seed=2))
    config = replay_config(path)
    worker = register(config)
    job = submit(alice, django_capture_on_commit_callbacks, network="mobilenet", n_trial=9 * 8, round_trials=8,
                 gpus=[worker.queue], tuner="random")
    drive(job, worker, config)

    runs = job.runs.select_related("task")
    assert {run.task.label: run.trials_done for run in runs} == {f"D{i}": 8 for i in range(1, 10)}
    assert job.state == State.DONE


def test_charlie_cannot_see_alices_network_job(alice, worker, django_user_model, client,
                                               django_capture_on_commit_callbacks):
    job = submit(alice, django_capture_on_commit_callbacks, network="resnet18", n_trial=16, round_trials=8)
    client.force_login(django_user_model.objects.create_user("charlie", password="charlie-password-1"))
    assert client.get(f"/api/network-jobs/{job.pk}/").status_code == 404
    assert client.get(job.get_absolute_url()).status_code == 404
    assert client.post(f"/api/network-jobs/{job.pk}/cancel/").status_code == 404
    assert Workload.objects.count() == 12
