"""Confirmations end to end: real Redis, real Celery worker processes serving a replay
recording with repeated measurements of its configs (and cuDNN lines), a tuning job whose
top-k is confirmed when it ends, and re-measure jobs from an import batch and a leaderboard."""
import dataclasses
import gzip

import pytest

from engine import create_task
from engine.confirm import MIN_ROUNDS, Contender, ReplayStopwatch, Role, confirm_contenders, contenders_for, top_k_distinct
from engine.logfile import ErrorNo, Record, make_target, write_records
from engine.synthetic import MODEL, synthetic_recording
from engine.workloads import PRESETS
from jobs.models import JobRun, State
from jobs_fixtures import REPLAY_QUEUE, WorkerProcess, redis_url, wait_for  # noqa: F401
from records.importing import import_log
from records.models import Baseline, MeasurementRecord, Workload
from records.standings import leaderboard

REPEATS = 5
CUDNN_US = (61.0, 60.0, 63.0, 60.5, 62.0)
TASK = create_task(PRESETS["C12"].task_name, PRESETS["C12"].args)


def repeated_recording(configs: int = 60) -> list[Record]:
    """Each synthetic config measured REPEATS times (1 % apart), then five cuDNN baselines."""
    records = []
    for record in synthetic_recording(TASK, configs, seed=1):
        for k in range(REPEATS):
            costs = tuple(c * (1 + 0.01 * k) for c in record.costs)
            records.append(dataclasses.replace(record, costs=costs, timestamp=record.timestamp + k / 10))
    records += [
        Record(target=make_target(MODEL), task_name=TASK.name, args=TASK.args, config_index=0, entity=[],
               costs=(us * 1e-6,), error_no=ErrorNo.NO_ERROR, all_cost=0.1, timestamp=1.8e9 + i,
               tvm_version="baseline:cudnn")
        for i, us in enumerate(CUDNN_US)
    ]
    return records


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    path = tmp_path_factory.mktemp("repeated") / "c12_repeated.log.gz"
    with gzip.open(path, "wt", encoding="utf-8") as stream:
        write_records(stream, repeated_recording())
    return path


def test_the_protocol_interleaves_rounds_and_times_each_contender_warm_and_cold():
    order = []

    class Recording(ReplayStopwatch):
        def time(self, index, cold):
            order.append((index, cold))
            return super().time(index, cold)

    records = repeated_recording(10)
    best = top_k_distinct([r for r in records if not r.tvm_version.startswith("baseline:")], 2)
    contenders = contenders_for(TASK, [(r.config_index, r.entity) for r in best])
    result = confirm_contenders(TASK, contenders, Recording(records, make_target(MODEL)), rounds=MIN_ROUNDS)

    assert [c.role for c in contenders] == [Role.TUNED, Role.TUNED, Role.VENDOR, Role.DEFAULT]
    ready = [0, 1, 2]  # the default config is not in the recording
    assert order == [(i, cold) for _ in range(MIN_ROUNDS) for i in ready for cold in (False, True)]
    tuned = result.timings[0]
    assert len(tuned.warm) == len(tuned.cold) == MIN_ROUNDS
    assert tuned.warm_spread.min == pytest.approx(best[0].mean_cost)  # the recorded repeats, in turn
    assert tuned.warm_spread.max == pytest.approx(best[0].mean_cost * 1.04)
    assert result.timings[2].warm_spread.median == pytest.approx(61e-6)
    assert result.timings[3].error_no == ErrorNo.UNKNOWN_ERROR and "not in the recording" in result.timings[3].error


def test_fewer_than_five_rounds_is_refused():
    with pytest.raises(ValueError, match="at least 5 rounds"):
        confirm_contenders(TASK, [Contender(Role.VENDOR, provider="cudnn")], ReplayStopwatch([], make_target(MODEL)), rounds=3)


@pytest.fixture
def worker(recording, redis_url, tmp_path):  # noqa: F811
    process = WorkerProcess(recording, redis_url, tmp_path / "worker.log", pace=0.0)
    process.wait_ready()
    yield process
    process.stop()


def finished(job_id):
    run = JobRun.objects.select_related("device").get(job_id=job_id)
    return run if run.state not in (State.QUEUED, State.RUNNING) else None


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_tuning_run_confirms_its_top_k_and_its_best_is_the_confirmed_median(worker, alice_client):
    response = alice_client.post("/api/jobs/", {
        "template": "conv2d_nchw.cuda", "preset": "C12", "tuner": "random", "n_trial": 30, "gpus": [REPLAY_QUEUE],
        "top_k": 3, "seed": 4,
    }, content_type="application/json")
    assert response.status_code == 201, response.content
    job_id = response.json()["id"]

    run = wait_for(lambda: finished(job_id), what="the job to finish")
    assert run.state == State.DONE, run.message
    assert "top 3 confirmed in 5 interleaved rounds" in run.message
    assert run.trials_done == 30  # confirmations are not trials
    confirmations = run.confirmations()
    tuned = confirmations.filter(environment__role="tuned", error_no=0)
    assert tuned.count() == 6 and set(tuned.values_list("cache", flat=True)) == {"warm", "cold"}
    assert all(len(r.costs) == 5 and r.rounds == 5 for r in tuned)
    assert run.confirmation_batch.source == "confirmation"

    cudnn = Baseline.objects.get(device=run.device, provider="cudnn")
    assert cudnn.rounds == 5 and sorted(cudnn.costs) == pytest.approx(sorted(us * 1e-6 for us in CUDNN_US))
    assert cudnn.cost == pytest.approx(61e-6) and cudnn.batch_id == run.confirmation_batch_id

    best = leaderboard(Workload.objects.get(pk=run.job.workload_id)).bests[0]
    assert best.confirmed and best.rounds == 5 and best.n_measurements == 5
    fastest_tuned = min(r.mean_cost for r in run.records().filter(error_no=0))
    assert best.min_cost == pytest.approx(fastest_tuned)  # its recorded repeats: 1 % apart
    assert best.median_cost == pytest.approx(fastest_tuned * 1.02)

    progress = alice_client.get(f"/api/jobs/{job_id}/").json()["runs"][0]
    assert progress["confirmed_best"]["warm"]["median"] == pytest.approx(best.median_cost)
    assert {row["role"] for row in progress["confirmations"]} >= {"tuned", "vendor"}
    page = alice_client.get(f"/jobs/{job_id}/").content.decode()
    assert f"Confirmed on {REPLAY_QUEUE}" in page and "top 3 confirmed in 5 interleaved rounds" in page

    speedups = alice_client.get("/api/speedups/", {"device": REPLAY_QUEUE}).json()["rows"][0]
    assert speedups["rounds"] == 5 and speedups["speedup"] == pytest.approx(61e-6 / best.median_cost)

    # A faster process's confirmation of cuDNN (another batch) is what stands, on the job page too.
    Baseline.objects.filter(pk=cudnn.pk).update(cost=50e-6, costs=[50e-6] * 5, batch=None)
    vendor = [row for row in alice_client.get(f"/api/jobs/{job_id}/").json()["runs"][0]["confirmations"]
              if row["role"] == "vendor"]
    assert [row["warm"]["median"] for row in vendor] == [pytest.approx(50e-6)]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_re_measure_jobs_from_an_import_and_from_a_leaderboard_stand_beside_the_originals(
    worker, alice_client, tmp_path
):
    # An import of three configs "measured on a V100" (the recording holds them).
    picked = [r for r in repeated_recording()[::REPEATS]][:3]
    v100 = [dataclasses.replace(r, target="cuda -model=v100", costs=(r.costs[0] * 3,)) for r in picked]
    log = tmp_path / "v100.log"
    with log.open("w") as stream:
        write_records(stream, v100)
    with log.open() as lines:
        batch = import_log(lines, log.name)
    workload = Workload.objects.get(task_name=TASK.name)

    response = alice_client.post("/api/jobs/", {
        "kind": "remeasure", "workload": workload.pk, "from_batch": batch.pk, "gpus": [REPLAY_QUEUE],
    }, content_type="application/json")
    assert response.status_code == 201, response.content
    run = wait_for(lambda: finished(response.json()["id"]), what="the re-measure job")
    assert run.state == State.DONE, run.message
    assert "1 configs re-measured" in run.message  # the import's best of its one GPU
    best_v100 = min(v100, key=lambda r: r.mean_cost)
    remeasured = run.confirmations().filter(environment__role="tuned", cache="warm").get()
    assert remeasured.config_index == TASK.config_space.index_of(best_v100.entity)

    board = leaderboard(workload)
    assert {b.device.model: b.confirmed for b in board.bests} == {REPLAY_QUEUE: True, "v100": False}
    page = alice_client.get(f"/leaderboard/{workload.pk}/").content.decode()
    assert "confirmed" in page

    # The top 2 of the replay GPU's leaderboard, through the browser form.
    response = alice_client.post("/jobs/remeasure/", {
        "workload": workload.pk, "from_device": REPLAY_QUEUE, "top_k": 2, "gpus": [REPLAY_QUEUE],
    })
    assert response.status_code == 302, response.content.decode()[-2000:]
    job_id = int(response["Location"].rstrip("/").split("/")[-1])
    run = wait_for(lambda: finished(job_id), what="the leaderboard re-measure")
    assert run.state == State.DONE, run.message
    assert run.confirmations().filter(environment__role="tuned", cache="warm").count() == 1  # only one on record
    assert MeasurementRecord.objects.filter(kind="confirmation", environment__role="tuned", cache="warm").count() == 2


@pytest.mark.django_db
def test_a_re_measure_request_names_what_is_wrong(alice_client):
    response = alice_client.post("/api/jobs/", {"kind": "remeasure", "workload": 999, "gpus": ["nope"]},
                                 content_type="application/json")
    assert response.status_code == 400
    body = response.json()
    assert "workload" in body and "from_batch" in body


@pytest.mark.django_db
def test_an_imported_confirmations_file_puts_its_medians_on_the_leaderboard(tmp_path):
    import json

    from django.core.management import call_command

    records = repeated_recording(10)
    best = top_k_distinct([r for r in records if not r.tvm_version.startswith("baseline:")], 1)
    contenders = contenders_for(TASK, [(r.config_index, r.entity) for r in best])
    result = confirm_contenders(TASK, contenders, ReplayStopwatch(records, make_target("h200")), rounds=7)
    path = tmp_path / "verify.json"
    path.write_text(json.dumps({"confirmations": [result.to_dict()]}))

    call_command("import_confirmations", str(path))

    workload = Workload.objects.get(task_name=TASK.name)
    board = leaderboard(workload)
    assert board.bests[0].confirmed and board.bests[0].rounds == 7
    assert board.bests[0].median_cost == pytest.approx(result.timings[0].warm_spread.median)
    cudnn = Baseline.objects.get(workload=workload, provider="cudnn")
    assert cudnn.rounds == 7 and cudnn.cost == pytest.approx(result.timings[1].warm_spread.median)


@pytest.mark.django_db
def test_a_file_that_is_not_confirmations_is_refused(tmp_path):
    from django.core.management import CommandError, call_command

    path = tmp_path / "x.json"
    path.write_text('{"rows": []}')
    with pytest.raises(CommandError, match="not a confirmations file"):
        call_command("import_confirmations", str(path))


def test_a_replayed_measurement_keeps_the_code_hash_it_was_recorded_with():
    from engine.measure import to_record
    from engine.replay import ReplayMeasurer

    recorded = dataclasses.replace(repeated_recording(3)[0], code_hash="sha256:" + "ab" * 32)
    config = TASK.config_space.from_entity(recorded.entity)

    result = ReplayMeasurer([recorded]).measure(TASK, [config])[0]

    assert to_record(TASK, config, result, recorded.target).code_hash == recorded.code_hash


def test_the_gpu_stopwatch_compiles_its_contenders_in_the_parent_and_sends_what_pickles(tmp_path, monkeypatch):
    """The measuring child has a CUDA context and may not spawn compile workers: the parent
    compiles (NVRTC, no GPU needed) and sends sources, builds and reasons over the pipe."""
    import pickle

    from engine.confirm import Unready
    from engine.gpu.confirming import FreshProcessStopwatch
    from engine.measure import DeviceInfo

    monkeypatch.setenv("TUNERWEB_KERNEL_CACHE", str(tmp_path))
    stopwatch = object.__new__(FreshProcessStopwatch)  # the parent's half alone: no child, no GPU
    stopwatch.device, stopwatch._builder = DeviceInfo(model="h200", compute_capability="9.0"), None
    best = TASK.config_space.from_entity(repeated_recording(1)[0].entity)
    broken = [list(knob) for knob in best.to_entity()]
    broken[0][2] = [-1, 3, 3, 3]  # 3 does not divide 512 channels
    contenders = contenders_for(TASK, [(best.index, best.to_entity()), (1, broken)])
    try:
        kernels = pickle.loads(pickle.dumps(stopwatch._kernels(TASK, contenders)))
    finally:
        stopwatch._builder.close()

    source, build = kernels[0]
    assert build.ok and build.cubin_path.startswith(str(tmp_path)) and source.name
    assert isinstance(kernels[1], Unready) and kernels[1].error_no == ErrorNo.INSTANTIATION_ERROR
    assert 2 not in kernels  # the vendor baseline is the child's to build
    assert kernels[3][1].ok  # the default config


@pytest.mark.django_db
def test_a_vendor_baseline_keeps_its_fastest_process_until_the_library_changes():
    from records.confirmations import store_confirmation
    from records.models import ImportBatch

    records = repeated_recording(10)
    best = top_k_distinct([r for r in records if not r.tvm_version.startswith("baseline:")], 1)
    contenders = contenders_for(TASK, [(r.config_index, r.entity) for r in best])
    result = confirm_contenders(TASK, contenders, ReplayStopwatch(records, make_target("h200")))
    batch = ImportBatch.objects.create(file_name="c.json", source=ImportBatch.Source.CONFIRMATION)

    def store(session: str, cudnn_us: float, version: str = "9.19") -> Baseline:
        timings = [dataclasses.replace(t, warm=[cudnn_us * 1e-6] * MIN_ROUNDS, cold=[cudnn_us * 1.5e-6] * MIN_ROUNDS,
                                       details={"library": "cuDNN", "library_version": version, "algorithm": session})
                   if t.contender.role == Role.VENDOR else t for t in result.timings]
        store_confirmation(dataclasses.replace(result, timings=timings, session=session), batch)
        return Baseline.objects.get(provider="cudnn")

    assert store("first", 60.0).cost == pytest.approx(60e-6)
    slower = store("second", 80.0)  # cuDNN picked a slower algorithm in this process
    assert slower.cost == pytest.approx(60e-6) and slower.environment["algorithm"] == "first"
    assert "the fastest of 2 fresh processes" in slower.note
    assert "fastest of 2" in store("second", 80.0).note  # the same session twice is one process
    faster = store("third", 50.0)
    assert faster.cost == pytest.approx(50e-6) and faster.cold_cost == pytest.approx(75e-6)
    assert "the fastest of 3 fresh processes" in faster.note and faster.environment["algorithm"] == "third"
    upgraded = store("fourth", 90.0, version="9.20")  # a new cuDNN starts over
    assert upgraded.cost == pytest.approx(90e-6) and "fastest" not in upgraded.note
