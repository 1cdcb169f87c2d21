"""The runner's check, before a kernel whose blocks wait on one another (`co_resident`) is launched, that its
whole grid can be resident at once, without a GPU: the decision, and the driver's occupancy as a stand-in
reports it (tests/test_gpu_measurer runs it on a GPU)."""
import dataclasses
from types import SimpleNamespace

from engine.gpu.runner import fits_at_once, why_not_resident_at_once
from engine.ops.base import KernelSource

SOURCE = KernelSource("k", "", (264, 1, 1), (128, 1, 1), 40960, ("data", "kernel", "output"), 2, co_resident=True)


def driver_fitting(blocks_per_sm: int):
    """CuPy's driver module and a loaded kernel, as far as the check reads them; the calls it made in `calls`."""
    calls = []

    def occupancy(function, threads, shared_bytes):
        calls.append((function, threads, shared_bytes))
        return blocks_per_sm

    cp = SimpleNamespace(cuda=SimpleNamespace(driver=SimpleNamespace(occupancyMaxActiveBlocksPerMultiprocessor=occupancy)))
    return cp, SimpleNamespace(kernel=SimpleNamespace(ptr=1234)), calls


def test_a_grid_fits_at_once_when_its_blocks_are_no_more_than_the_sms_hold():
    assert fits_at_once(2, 132, (264, 1, 1))
    assert not fits_at_once(2, 132, (265, 1, 1))
    assert not fits_at_once(2, 114, (264, 1, 1))  # an H100 PCIe's 114 SMs
    assert not fits_at_once(0, 132, (1, 1, 1))  # the driver fits none: nothing runs
    assert fits_at_once(3, 10, (5, 3, 2))


def test_a_co_resident_grid_the_driver_fits_is_launched():
    cp, function, calls = driver_fitting(2)
    assert why_not_resident_at_once(cp, function, SOURCE, sms=132) is None
    assert calls == [(1234, 128, 40960)]  # the function's handle, its threads and dynamic shared memory


def test_a_co_resident_grid_the_driver_cannot_fit_is_refused_with_the_numbers():
    cp, function, _ = driver_fitting(1)
    assert why_not_resident_at_once(cp, function, SOURCE, sms=132) == (
        "the grid's 264 blocks wait on one another, so all must be resident at once, but the driver fits 1 blocks "
        "of 128 threads and 40960 bytes of shared memory an SM, 132 on this GPU's 132 SMs")


def test_kernels_whose_blocks_do_not_wait_on_one_another_are_not_asked_about():
    cp, function, calls = driver_fitting(0)
    assert why_not_resident_at_once(cp, function, dataclasses.replace(SOURCE, co_resident=False), sms=132) is None
    assert calls == []
