"""The hub's kernels as custom-kernel specs (benchmarks/hub_specs.py): the same spaces as the hub's
caches, compiling for sm_90, and the H200 script's output landing on the hub's workloads."""
from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

import engine
from engine import kernel_tuner as kt
from engine.gpu.builder import Builder
from engine.measure import MeasureResult, to_record
from engine.logfile import ErrorNo
from records.models import Workload
from records.portability import portability
from tests.hub_data import GPUS, HUB, cache_path, device_for

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import hub_kernels_h200  # noqa: E402
import hub_specs  # noqa: E402


@pytest.fixture(scope="module", params=hub_specs.KERNELS)
def kernel(request):
    return request.param


@pytest.fixture(scope="module")
def task(kernel):
    return engine.create_task("custom", [hub_specs.hub_spec(HUB, kernel)])


def test_the_specs_valid_configs_are_exactly_the_configs_of_the_hubs_caches(kernel, task):
    valid = {i for i in task.config_space.iter_indexes() if task.why_invalid(task.config_space.get(i)) is None}
    cached = {task.config_space.index_of(r.entity) for r in kt.read_file(cache_path(kernel, "A100")).records}
    assert valid == cached


def test_the_t1_workload_is_the_workload_the_caches_import_onto(kernel):
    assert hub_specs.hub_workload(HUB, kernel).args == kt.read_file(cache_path(kernel, "W6600")).records[0].args


def test_the_hub_gpus_best_configs_compile_for_sm_90(kernel, task, tmp_path):
    configs = hub_kernels_h200.task_configs(task, list(hub_kernels_h200.hub_bests(HUB, kernel).values())[:2])
    with Builder("sm_90", workers=2, cache_dir=tmp_path, timeout=120) as builder:
        results = builder.build([task.template.kernel(task.params, c) for c in configs])
    assert [r.message[:300] for r in results if not r.ok] == []


def test_the_convolution_filter_goes_to_constant_memory(task, kernel):
    source = task.template.kernel(task.params, task.default_config())
    if kernel == "convolution_milo":
        assert source.constants == (("d_filter", 2),) and source.code.count('extern "C" {') == 1
    else:
        assert source.constants == ()


@pytest.mark.django_db
def test_the_scripts_output_lands_on_the_hub_workload_and_the_matrix_shows_five_gpus(tmp_path):
    kernel = "convolution_milo"
    task = engine.create_task("custom", [hub_specs.hub_spec(HUB, kernel)])
    bests = hub_kernels_h200.hub_bests(HUB, kernel)
    configs = hub_kernels_h200.task_configs(task, bests.values())
    # Stand-in measurements (the A100's times), as the GPU measurer's results would come back.
    a100 = {r.config_index: r for r in kt.read_file(cache_path(kernel, "A100")).records}
    workload = hub_specs.hub_workload(HUB, kernel)
    results = [MeasureResult(ErrorNo.NO_ERROR, a100[workload.index_of(p)].costs) for p in bests.values()]
    records = [to_record(task, c, r, "cuda -model=h200") for c, r in zip(configs, results)]
    hub_kernels_h200.write_results(tmp_path, kernel, workload, records, "NVIDIA H200")
    for gpu in GPUS:
        device = device_for(gpu)
        call_command("import_records", str(cache_path(kernel, gpu)), *(["--device", device] if device else []),
                     stdout=io.StringIO())
    out = io.StringIO()
    call_command("import_records", str(tmp_path / f"{kernel}_H200.json"), stdout=out)
    assert f"{len(configs)} imported" in out.getvalue()
    [hub_workload] = Workload.objects.all()
    matrix = portability(hub_workload)
    assert sorted(d.model for d in matrix.devices) == ["a100", "h200", "mi250x", "rtxa4000", "w6600"]
    assert all(cell.percent is not None for row in matrix.rows for cell in row.cells)


H200_RUNS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks" / "hub-h200"


@pytest.mark.django_db
def test_the_committed_h200_runs_join_the_hubs_four_gpus_on_one_leaderboard(kernel):
    for gpu in GPUS:
        device = device_for(gpu)
        call_command("import_records", str(cache_path(kernel, gpu)), *(["--device", device] if device else []),
                     stdout=io.StringIO())
    h200_cache = kt.read_file(H200_RUNS / f"{kernel}_H200.json")
    call_command("import_records", str(H200_RUNS / f"{kernel}_H200.json"), stdout=io.StringIO())
    [workload] = Workload.objects.all()
    assert workload.records.filter(device__model="h200").count() == len(h200_cache.records)
    matrix = portability(workload)
    assert sorted(d.model for d in matrix.devices) == ["a100", "h200", "mi250x", "rtxa4000", "w6600"]
    # The H200 measured every hub GPU's best config, so its column is full.
    h200 = [d.model for d in matrix.devices].index("h200")
    assert all(row.cells[h200].percent is not None for row in matrix.rows)
    fastest = min((r for r in h200_cache.records if r.ok), key=lambda r: r.mean_cost)
    [h200_row] = [row for row in matrix.rows if row.device.model == "h200"]
    assert h200_row.best.config_index == fastest.config_index
