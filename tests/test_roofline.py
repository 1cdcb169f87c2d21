"""The roofline per GPU and the "% of peak" column: a record's FLOP/s over what the GPU's
peak FP32 and DRAM bandwidth allow at its workload's arithmetic intensity."""
import pytest
from django.urls import reverse

from engine import describe_workload
from engine.workloads import PRESETS
from records.models import Device, MeasurementRecord
from records.roofline import KNOWN_PEAKS, Peak, device_peaks, percent_of_peak, percent_of_peak_expression, roofline
from tests.factories import make_device, make_record, make_workload

pytestmark = pytest.mark.django_db


def test_the_bound_is_bandwidth_below_the_ridge_and_compute_above():
    peak = Peak(gflops=1000, bandwidth=100)  # ridge at 10 FLOP/byte
    assert peak.bound(2) == 200 and peak.bound(50) == 1000 and peak.bound(None) == 1000


def test_a_replay_device_has_the_peaks_of_the_gpu_it_recorded():
    assert device_peaks() == {}
    h200, replay, unknown = make_device("h200"), make_device("h200-replay", is_replay=True), make_device("mystery")
    peaks = device_peaks()
    assert peaks[h200.pk] == peaks[replay.pk] == KNOWN_PEAKS["h200"] and peaks[unknown.pk] is None


def test_percent_of_peak_in_sql_matches_python_for_memory_and_compute_bound_workloads():
    h200, unknown = make_device("h200"), make_device("mystery")
    gemm = make_workload("gemm", PRESETS["G3"].args)
    broadcast = make_workload("broadcast_nchw", PRESETS["B-div-b"].args)
    for workload in (gemm, broadcast):
        workload.bytes_moved = describe_workload(workload.task_name, workload.args).bytes_moved
        workload.save()
    records = [make_record(gemm, h200, 80e-6), make_record(broadcast, h200, 400e-6), make_record(gemm, unknown, 80e-6)]
    peaks = device_peaks()

    in_sql = dict(MeasurementRecord.objects.annotate(p=percent_of_peak_expression(peaks)).values_list("pk", "p"))
    for record in records:
        expected = percent_of_peak(MeasurementRecord.objects.select_related("workload").get(pk=record.pk), peaks[record.device_id])
        assert in_sql[record.pk] == pytest.approx(expected) if expected is not None else in_sql[record.pk] is None
    gemm_share = percent_of_peak(MeasurementRecord.objects.select_related("workload").get(pk=records[0].pk), peaks[h200.pk])
    assert gemm_share == pytest.approx(100 * 2 * 1024**3 / 80e-6 / 1e9 / 67_000)  # compute bound


def test_the_roofline_page_plots_each_best_at_its_intensity(client):
    h200 = make_device("h200")
    c12 = make_workload()  # conv2d counts its least bytes now
    c12.bytes_moved = describe_workload(c12.task_name, c12.args).bytes_moved
    c12.save()
    best = make_record(c12, h200, 63e-6)
    make_record(c12, h200, 90e-6)
    winograd = make_workload("conv2d_nchw_winograd.cuda")
    make_record(winograd, h200, 50e-6)

    plot = roofline(h200)
    assert [p.record.pk for p in plot.points] == [best.pk] and len(plot.without_bytes) == 1
    assert plot.points[0].intensity == pytest.approx(c12.flops / c12.bytes_moved)
    html = client.get(reverse("records:roofline"), {"device": "h200"}).content.decode()
    assert 'data-chart="roofline"' in html and 'id="roofline-data"' in html and "1 workload without a byte count" in html


def test_a_gpu_of_unknown_peak_gets_no_roofs_and_an_unknown_model_a_clear_message(client):
    make_device("mystery")
    html = client.get(reverse("records:roofline"), {"device": "mystery"}).content.decode()
    assert "peak FLOP/s and bandwidth are not known" in html
    response = client.get(reverse("records:roofline"), {"device": "nope"})
    assert response.status_code == 400 and "There is no GPU model of that name." in response.content.decode()


# An H200 as its worker announces it: 132 SMs of compute capability 9.0 at 1980 MHz, HBM3e at
# 3201 MHz on a 6144-bit bus.
H200_PROPERTIES = {"compute_capability": "9.0", "sm_count": 132, "clock_mhz": 1980,
                   "memory_clock_mhz": 3201, "memory_bus_bits": 6144}


def test_a_gpu_with_recorded_properties_takes_its_peaks_from_them_not_the_table(client):
    measured = make_device("h200", **H200_PROPERTIES)
    imported = make_device("v100")  # TopHub's: known only from its logs
    partly = make_device("a100", compute_capability="8.0", sm_count=108)  # no clocks recorded

    peaks = device_peaks()
    assert peaks[measured.pk].gflops == pytest.approx(2 * 128 * 132 * 1980 / 1000)  # 66.9 TFLOP/s
    assert peaks[measured.pk].bandwidth == pytest.approx(2 * 3201 * 6144 / 8 / 1000)  # 4.92 TB/s
    assert peaks[measured.pk] != KNOWN_PEAKS["h200"] and "recorded properties" in peaks[measured.pk].source
    assert peaks[imported.pk] == KNOWN_PEAKS["v100"] and peaks[partly.pk] == KNOWN_PEAKS["a100"]
    html = client.get(reverse("records:roofline"), {"device": "h200"}).content.decode()
    assert "Roofs from the GPU&#x27;s recorded properties: peak FP32 66,908 GFLOP/s, DRAM 4,917 GB/s" in html


def test_a_replay_device_keeps_the_table_even_with_properties_of_its_own():
    replay = make_device("h200-replay", is_replay=True, **H200_PROPERTIES)
    assert device_peaks()[replay.pk] == KNOWN_PEAKS["h200"]


def test_a_gpu_worker_announces_the_properties_the_roofline_reads():
    from jobs.worker import WorkerConfig, register

    register(WorkerConfig(kind="gpu", device={"model": "h200", "name": "NVIDIA H200", **H200_PROPERTIES}, gpu_index=0))
    device = Device.objects.get(model="h200")
    assert (device.clock_mhz, device.memory_clock_mhz, device.memory_bus_bits) == (1980, 3201, 6144)
    assert roofline(device).peak.source == "the GPU's recorded properties"
