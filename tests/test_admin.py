import pytest
from django.urls import reverse

from tests.factories import make_baseline, make_batch, make_device, make_record, make_workload

pytestmark = pytest.mark.django_db

MODELS = ["device", "workload", "importbatch", "measurementrecord", "baseline"]


@pytest.fixture
def staff_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.com", "root-password-1"))
    return client


@pytest.fixture
def record():
    device, workload = make_device("v100"), make_workload()
    make_baseline(workload, device, 129e-6)
    return make_record(workload, device, 100e-6, batch=make_batch())


@pytest.mark.parametrize("model", MODELS)
def test_a_staff_user_sees_every_changelist_and_change_page(staff_client, record, model):
    changelist = staff_client.get(reverse(f"admin:records_{model}_changelist"))
    assert changelist.status_code == 200
    first = changelist.context["cl"].result_list[0]
    assert staff_client.get(reverse(f"admin:records_{model}_change", args=[first.pk])).status_code == 200


def test_records_filter_by_device_task_and_error(staff_client, record):
    failed = make_record(record.workload, record.device, error_no=4)
    url = reverse("admin:records_measurementrecord_changelist")

    shown = staff_client.get(url, {"error_no__exact": 4, "device__id__exact": record.device_id,
                                   "workload__task_name": "conv2d_nchw.cuda"}).context["cl"].result_list

    assert list(shown) == [failed]


def test_a_visitor_is_sent_to_the_admin_login(client):
    assert client.get(reverse("admin:records_measurementrecord_changelist")).status_code == 302
