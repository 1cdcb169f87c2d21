import math

import pytest
from django.urls import reverse

from records.models import Baseline
from records.speedups import geomean, speedup_table
from tests.factories import C9_ARGS, make_baseline, make_device, make_record, make_workload

pytestmark = pytest.mark.django_db


@pytest.fixture
def h200_table():
    h200 = make_device("h200")
    c12, c9 = make_workload(), make_workload(args=C9_ARGS)
    untuned = make_workload(task_name="depthwise_conv2d_nchw.cuda", args=[1], flops=None)
    no_baseline = make_workload(task_name="conv2d_nchw.cuda", args=[2], flops=None)
    make_record(c12, h200, 100e-6)
    make_record(c12, h200, 80e-6)
    make_record(c9, h200, 40e-6)
    make_record(no_baseline, h200, 7e-6)
    make_baseline(c12, h200, 129e-6)
    make_baseline(c9, h200, 76.4e-6)
    make_baseline(untuned, h200, 10e-6)
    make_baseline(c12, h200, 160e-6, provider=Baseline.Provider.DEFAULT_CONFIG)
    make_baseline(c12, make_device("v100"), 1e-6)  # another GPU's baseline is not ours
    return h200, c12, c9, untuned, no_baseline


def test_each_row_is_baseline_time_over_best_tuned_time(h200_table):
    h200, c12, c9, untuned, no_baseline = h200_table

    table = speedup_table(h200, Baseline.Provider.CUDNN)

    assert [(row.workload, row.speedup) for row in table.rows] == [
        (c12, pytest.approx(129 / 80)), (c9, pytest.approx(76.4 / 40))
    ]
    assert table.geomean == pytest.approx(math.sqrt((129 / 80) * (76.4 / 40)))
    assert [best.workload for best in table.without_baseline] == [no_baseline]
    assert [baseline.workload for baseline in table.without_tuned] == [untuned]


def test_the_provider_picks_which_baseline(h200_table):
    h200, c12, *_ = h200_table

    table = speedup_table(h200, Baseline.Provider.DEFAULT_CONFIG)

    assert [(row.workload, row.speedup) for row in table.rows] == [(c12, pytest.approx(2.0))]
    assert table.geomean == pytest.approx(2.0)


def test_no_rows_means_no_geometric_mean():
    assert geomean([]) is None
    assert speedup_table(make_device("a100"), Baseline.Provider.CUBLAS).geomean is None


def test_the_page_shows_rows_mean_and_the_separate_lists(client, h200_table):
    response = client.get(reverse("records:speedups"), {"device": "h200"})

    html = response.content.decode()
    assert response.status_code == 200
    assert response.context["table"].provider == "cudnn"
    assert "129.00" in html and "80.00" in html and "1.61×" in html
    assert f"{math.sqrt((129 / 80) * (76.4 / 40)):.2f}×" in html
    assert "Tuned, no cuDNN baseline" in html and "cuDNN baseline, not tuned yet" in html


def test_an_unknown_provider_is_a_clear_400(client, h200_table):
    response = client.get(reverse("records:speedups"), {"device": "h200", "provider": "mkl"})

    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()
