"""The API in a browser and against its own OpenAPI schema."""
import pytest
from django.core.management import call_command

from records.models import Device

pytestmark = pytest.mark.django_db


@pytest.fixture
def imported(tophub_log):
    call_command("import_records", str(tophub_log), stdout=open("/dev/null", "w"))


def test_the_task_list_renders_in_a_browser(client, imported):
    response = client.get("/api/tasks/?format=api")

    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
    assert "conv2d_nchw.cuda" in response.content.decode()


def test_the_schema_says_the_task_list_is_a_list(client):
    schema = client.get("/api/schema/?format=json").json()
    answer = schema["paths"]["/api/tasks/"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]

    assert answer["type"] == "array"


def test_a_device_whose_model_has_a_dot_has_its_own_url(client):
    Device.objects.create(model="rtx-4090.2")

    response = client.get("/api/devices/rtx-4090.2/")

    assert response.status_code == 200 and response.json()["model"] == "rtx-4090.2"
