"""Kernel Tuner caches as replay recordings: `python -m engine replay` and a real replay worker."""
from __future__ import annotations

import gzip
import json

import pytest

from engine import kernel_tuner as kt
from engine.cli import main
from engine.replay import RecordingError, ReplayMeasurer, load_recording, recording_task
from jobs.models import JobRun, State
from jobs_fixtures import WorkerProcess, redis_url, wait_for  # noqa: F401
from tests.hub_data import cache_path


def _fastest_ms(kernel: str, gpu: str) -> float:
    with gzip.open(cache_path(kernel, gpu), "rt") as stream:
        cache = json.load(stream)["cache"]
    return min(e["time"] for e in cache.values() if not isinstance(e["time"], str))


def test_a_cache_is_a_recording_whose_task_space_is_the_cached_configs():
    measurer = ReplayMeasurer(load_recording(cache_path("convolution_milo", "A4000")))
    task = recording_task(measurer.records)
    assert task.name == kt.TASK_NAME and measurer.device.model == "rtxa4000"
    assert len(task.config_space) == 4362
    first = task.config_space.get(next(task.config_space.iter_indexes()))
    [answer] = measurer.measure(task, [first])
    assert answer.ok and answer.mean_cost > 0


def test_engine_replay_of_a_whole_cache_by_grid_search_finds_its_fastest_entry(capsys):
    path = str(cache_path("convolution_milo", "A100"))
    assert main(["replay", path, "--tuner", "grid", "--trials", "4362", "--batch-size", "256"]) == 0
    out = capsys.readouterr().out
    assert f"best {_fastest_ms('convolution_milo', 'A100'):.4f} ms," in out and "(4362 trials measured)" in out


def test_engine_replay_of_the_mi250x_cache_needs_its_device_named(capsys):
    path = str(cache_path("dedispersion_milo", "MI250X"))
    assert main(["replay", path, "--tuner", "random", "--trials", "20"]) == 2
    assert "empty device name" in capsys.readouterr().err
    assert main(["replay", path, "--device", "mi250x", "--tuner", "random", "--trials", "20", "--seed", "3"]) == 0
    assert "(20 trials measured)" in capsys.readouterr().out


def test_a_device_for_an_autotvm_recording_is_refused(tmp_path):
    log = tmp_path / "r.log"
    log.write_text("")
    with pytest.raises(RecordingError, match="names its GPU itself"):
        load_recording(log, "a100")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_job_replays_on_the_mi250x_space_on_a_real_worker(redis_url, tmp_path, alice_client):  # noqa: F811
    path = cache_path("dedispersion_milo", "MI250X")
    worker = WorkerProcess(path, redis_url, tmp_path / "worker.log", 0.0, extra_args=("--device", "mi250x"))
    try:
        worker.wait_ready()
        args = kt.read_file(path, device="mi250x").records[0].args
        response = alice_client.post("/api/jobs/", {"template": kt.TASK_NAME, "args": args, "tuner": "random",
                                                    "n_trial": 24, "seed": 1, "gpus": ["mi250x-replay"]},
                                     content_type="application/json")
        assert response.status_code == 201, response.content
        run = wait_for(lambda: JobRun.objects.filter(job_id=response.json()["id"])
                       .exclude(state__in=[State.QUEUED, State.RUNNING]).first(), what="the replayed job")
        assert run.state == State.DONE, run.message
        assert run.records().count() == 24
        cached = {r.config_index: r.costs for r in kt.read_file(path, device="mi250x").records}
        assert all(tuple(r.costs) == cached[r.config_index] for r in run.records())
    finally:
        worker.stop()


@pytest.mark.django_db
def test_a_kernel_tuner_job_for_a_real_gpu_is_refused_with_the_reason(alice_client):
    from jobs.worker import WorkerConfig, register

    register(WorkerConfig(kind="gpu", device={"model": "h200", "name": "NVIDIA H200"}, gpu_index=0))
    args = kt.read_file(cache_path("convolution_milo", "A100")).records[0].args
    response = alice_client.post("/api/jobs/", {"template": kt.TASK_NAME, "args": args, "tuner": "random",
                                                "n_trial": 10, "gpus": ["h200"]}, content_type="application/json")
    assert response.status_code == 400
    assert "a Kernel Tuner kernel has no source here" in " ".join(response.json()["gpus"])


def test_a_device_that_is_not_a_model_name_is_refused_for_a_replay_too(capsys):
    path = str(cache_path("dedispersion_milo", "MI250X"))
    assert main(["replay", path, "--device", "MI 250;x", "--tuner", "random", "--trials", "5"]) == 2
    assert "is not a GPU model name" in capsys.readouterr().err
