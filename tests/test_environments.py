"""Records keep what measured them: the records page filters and groups by the environment,
and a record's page shows a confirmation's provenance and its code status."""
import pytest
from django.urls import reverse

from records.models import MeasurementRecord
from tests.factories import make_device, make_record, make_workload

pytestmark = pytest.mark.django_db

OLD = {"gpu_uuid": "GPU-aaaa", "driver": "580.65", "cuda_runtime": "13.0", "nvrtc": "13.0", "cupy": "14.2.0",
       "sm_clock_mhz": 1980}
NEW = {**OLD, "driver": "590.10", "gpu_uuid": "GPU-bbbb"}


@pytest.fixture
def records():
    h200, workload = make_device("h200", compute_capability="9.0"), make_workload()
    return {
        "old": make_record(workload, h200, 50e-6, environment=OLD),
        "new": make_record(workload, h200, 48e-6, environment=NEW),
        "new2": make_record(workload, h200, 52e-6, environment=NEW),
        "imported": make_record(workload, h200, 60e-6),
        "confirmation": make_record(workload, h200, costs=[49e-6] * 5, kind=MeasurementRecord.Kind.CONFIRMATION,
                                    rounds=5, environment={**NEW, "session": "f00dfeedcafe1234", "role": "tuned"}),
    }


def test_the_records_page_filters_by_driver_board_and_kind(client, records):
    url = reverse("records:record_list")

    def ids(**params):
        return {r.pk for r in client.get(url, params).context["page"]}

    assert ids(driver="580.65") == {records["old"].pk}
    assert ids(gpu_uuid="GPU-bbbb", kind="tuning") == {records["new"].pk, records["new2"].pk}
    assert ids(kind="confirmation") == {records["confirmation"].pk}


def test_the_records_page_groups_by_an_environment_field(client, records):
    response = client.get(reverse("records:record_list"), {"group_by": "driver"})

    groups = {g["value"]: (g["n"], g["fastest"]) for g in response.context["groups"]}
    assert groups == {"580.65": (1, pytest.approx(50e-6)), "590.10": (3, pytest.approx(48e-6)),
                      None: (1, pytest.approx(60e-6))}
    assert "not recorded" in response.content.decode()
    assert client.get(reverse("records:record_list"), {"group_by": "colour"}).status_code == 400


def test_a_confirmation_shows_its_rounds_session_and_environment(client, records):
    html = client.get(reverse("records:record_detail", args=[records["confirmation"].pk])).content.decode()

    assert "5 interleaved rounds" in html and "session f00dfeedcafe" in html and "590.10" in html
    assert "unknown code" in html  # it has no code hash


def test_the_api_gives_each_records_kind_and_environment(client, records):
    body = client.get(f"/api/records/{records['confirmation'].pk}/").json()

    assert (body["kind"], body["cache"], body["rounds"]) == ("confirmation", "warm", 5)
    assert body["environment"]["driver"] == "590.10"
