"""engine.kernel_tuner: Kernel Tuner's cache, T4 and store_results files as engine records, on the hub's files."""
from __future__ import annotations

import gzip
import json
from collections import Counter

import pytest

from engine import kernel_tuner as kt
from engine.logfile import ErrorNo, pick_best

from tests.hub_data import KERNELS, all_caches, cache_path, device_for, unterminated


def _raw_cache(kernel: str, gpu: str) -> dict:
    with gzip.open(cache_path(kernel, gpu), "rt") as stream:
        return json.load(stream)


@pytest.fixture(scope="module")
def conv_a100():
    return kt.read_file(cache_path("convolution_milo", "A100"))


@pytest.mark.parametrize("kernel,gpu", all_caches())
def test_every_hub_cache_reads_one_record_per_entry_with_failures_by_kind(kernel, gpu):
    raw = _raw_cache(kernel, gpu)
    found = kt.read_file(cache_path(kernel, gpu), device=device_for(gpu))
    assert found.kind == kt.CACHE and not found.bad_entries and not found.unterminated
    assert len(found.records) == len(raw["cache"])
    strings = Counter(e["time"] for e in raw["cache"].values() if isinstance(e["time"], str))
    assert found.failures() == Counter({kt.FAILURE_ERRORS[s]: n for s, n in strings.items()})
    fastest_key = min((k for k, e in raw["cache"].items() if not isinstance(e["time"], str)),
                      key=lambda k: raw["cache"][k]["time"])
    [best] = pick_best(found.records).values()
    assert kt.KernelTunerWorkload.from_args(best.args).cache_key(kt.params_of_entity(best.entity)) == fastest_key
    assert best.mean_cost == pytest.approx(raw["cache"][fastest_key]["time"] / 1000, rel=1e-12)


def test_the_convolution_failures_are_compile_and_runtime_errors_in_seconds(conv_a100):
    failures = conv_a100.failures()
    assert failures == {ErrorNo.RUNTIME_DEVICE: 155, ErrorNo.COMPILE_DEVICE: 6}
    first = conv_a100.records[0]
    assert first.model == "a100" and first.task_name == kt.TASK_NAME and first.config_index == 0
    assert first.costs[0] == pytest.approx(3.976191997528076e-3)  # the file's first time, 3.976 ms
    assert len(first.costs) == 32 and first.timestamp > 1.7e9


def test_both_gpus_of_one_kernel_land_on_one_workload():
    a100 = kt.read_file(cache_path("dedispersion_milo", "A100"))
    w6600 = kt.read_file(cache_path("dedispersion_milo", "W6600"))
    assert a100.records[0].workload_key == w6600.records[0].workload_key
    assert {r.model for r in w6600.records} == {"w6600"}
    spec = a100.records[0].args[0]
    assert spec["kernel_name"] == "dedispersion_kernel" and spec["problem_size"] == [25000, 2048, 1]
    assert [name for name, _ in spec["tune_params"]][:2] == ["block_size_x", "block_size_y"]


def test_the_config_index_is_mixed_radix_with_the_first_parameter_fastest():
    workload = kt.KernelTunerWorkload.create("k", [8], [["a", [1, 2, 4]], ["b", [0, 1]]])
    assert workload.index_of({"a": 4, "b": 0}) == 2
    assert workload.index_of({"a": 1, "b": 1}) == 3
    with pytest.raises(ValueError, match="a=3 is not one of"):
        workload.index_of({"a": 3, "b": 1})


def test_the_empty_device_name_is_refused_without_a_device_and_read_with_one():
    path = cache_path("convolution_milo", "MI250X")
    with pytest.raises(kt.DeviceNameMissing, match="empty device name.*--device"):
        kt.read_file(path)
    assert {r.model for r in kt.read_file(path, device="mi250x").records} == {"mi250x"}


def test_device_names_map_to_model_slugs():
    assert kt.device_model("NVIDIA A100-PCIE-40GB", None) == "a100"
    assert kt.device_model("AMD Radeon PRO W6600", None) == "w6600"
    assert kt.device_model("NVIDIA RTX A4000", None) == "rtxa4000"
    assert kt.device_model("AMD Radeon PRO W6600", "my-gpu") == "my-gpu"


def test_an_unterminated_cache_reads_every_entry_written_so_far():
    text = unterminated(cache_path("convolution_milo", "A4000"), 100)
    found = kt.parse_cache(text)
    assert found.unterminated and len(found.records) == 100 and not found.bad_entries
    cut_mid_entry = text[:-40]
    assert len(kt.parse_cache(cut_mid_entry).records) == 99  # the entry being written is not there yet


def test_a_malformed_entry_is_reported_with_its_key_and_the_rest_reads():
    data = json.loads(gzip.decompress(cache_path("convolution_milo", "A100").read_bytes()))
    keys = list(data["cache"])
    data["cache"][keys[1]]["time"] = "Broken"
    data["cache"][keys[2]]["block_size_x"] = 17
    del data["cache"][keys[3]]["tile_size_y"]
    found = kt.parse_cache(json.dumps(data))
    assert len(found.records) == len(keys) - 3
    reasons = dict(found.bad_entries)
    assert "neither a number nor one of" in reasons[keys[1]]
    assert "key" in reasons[keys[2]] or "not one of" in reasons[keys[2]]
    assert "tile_size_y is missing" in reasons[keys[3]]


def test_a_file_of_something_else_is_refused_with_a_reason(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"hello": 1}')
    with pytest.raises(kt.KernelTunerFileError, match="not a Kernel Tuner"):
        kt.read_file(path)
    path.write_bytes(b"\x1f\x8bnot gzip")
    with pytest.raises(kt.KernelTunerFileError, match="gzip"):
        kt.read_file(path)


def test_the_t4_file_with_its_t1_file_gives_the_cache_records(conv_a100):
    t4 = kt.read_file(cache_path("convolution_milo", "A100_T4"), device="a100",
                      metadata_path=KERNELS / "convolution_milo.json")
    assert t4.kind == kt.T4 and len(t4.records) == 4362 and not t4.bad_entries
    assert t4.failures() == conv_a100.failures()
    assert t4.records[0].workload_key == conv_a100.records[0].workload_key
    by_index = {r.config_index: r for r in conv_a100.records}
    assert all(r.costs == by_index[r.config_index].costs and r.error_no == by_index[r.config_index].error_no
               for r in t4.records)


def test_t4_names_no_gpu_so_it_needs_a_device():
    with pytest.raises(kt.DeviceNameMissing):
        kt.read_file(cache_path("convolution_milo", "A100_T4"))


def test_a_t4_metadata_file_names_the_gpu():
    metadata = {"schema_version": "1.0.0", "metadata": {"environment": {"device_query": {
        "nvidia-smi": {"nvidia_smi_log": {"gpu": {"product_name": "NVIDIA H200"}}}}}}}
    data = {"schema_version": "1.0.0", "metadata": {"timeunit": "milliseconds"}, "results": [
        {"configuration": {"x": 1}, "times": {"runtimes": [2.0, 4.0]}, "invalidity": "correct", "correctness": 1}]}
    found = kt.parse_t4(data, metadata_file=metadata)
    assert found.records[0].model == "h200" and found.records[0].costs == (0.002, 0.004)


def _same(a, b) -> bool:
    return (a.workload_key, a.model, a.config_index, a.entity, a.costs, a.error_no, a.all_cost, a.timestamp) == \
        (b.workload_key, b.model, b.config_index, b.entity, b.costs, b.error_no, b.all_cost, b.timestamp)


@pytest.mark.parametrize("kernel,gpu", [("convolution_milo", "A100"), ("dedispersion_milo", "MI250X")])
def test_a_written_cache_and_t4_file_read_back_as_the_same_records(kernel, gpu):
    found = kt.read_file(cache_path(kernel, gpu), device=device_for(gpu))
    [workload] = found.workloads
    cache_text = json.dumps(kt.cache_document(workload, found.device_name or "AMD Instinct MI250X", found.records))
    again = kt.parse_cache(cache_text, device=device_for(gpu))
    assert len(again.records) == len(found.records)
    assert all(_same(a, b) for a, b in zip(found.records, again.records))
    t4_text = json.dumps(kt.t4_document(workload, found.device_name, found.records))
    t4_again = kt.parse_text(t4_text, device=device_for(gpu))
    assert all(_same(a, b) for a, b in zip(found.records, t4_again.records))


def test_a_store_results_file_reads_its_top_configs_per_device():
    data = {"version_number": "1.0", "kernel_name": "vector_add", "objective": "time",
            "objective_higher_is_better": False, "tunable_parameters": ["block_size_x"],
            "data": [{"device_name": "NVIDIA_A100_PCIE_40GB", "problem_size": "1000000",
                      "tunable_parameters": {"block_size_x": 256}, "time": 0.5},
                     {"device_name": "NVIDIA_A100_PCIE_40GB", "problem_size": "1000000",
                      "tunable_parameters": {"block_size_x": 128}, "time": 0.51},
                     {"device_name": "", "problem_size": "1000000",
                      "tunable_parameters": {"block_size_x": 128}, "time": 0.7}]}
    found = kt.parse_text(json.dumps(data))
    assert found.kind == kt.RESULTS and [r.model for r in found.records] == ["a100", "a100"]
    assert found.records[0].costs == (0.0005,) and found.workloads[0].problem_size == (1000000,)
    assert "empty device name" in found.bad_entries[0][1]
