"""Every API error is JSON with a clear message: unknown URLs, CSRF failures, bodies too big
(413) or nested too deep, seeds out of range, and an unreachable database (503, from a real
gunicorn whose PostgreSQL is not there)."""
import json

import pytest
import requests
from django.test import Client

from jobs.models import Job
from jobs_fixtures import C12_JOB as GOOD
from live_server import LiveServer
from tunerweb.up import free_port

pytestmark = pytest.mark.django_db


def post_json(client, body: str, **headers):
    return client.post("/api/jobs/", body, content_type="application/json", **headers)


def test_an_unknown_api_url_is_a_json_404(client):
    response = client.get("/api/no-such-thing/")

    assert response.status_code == 404 and response["Content-Type"] == "application/json"
    assert response.json()["detail"]


def test_a_body_over_the_limit_is_a_json_413(alice_client, settings):
    body = json.dumps({**GOOD, "padding": "x" * (6 * 1024 * 1024)})

    response = post_json(alice_client, body)

    assert response.status_code == 413 and response["Content-Type"] == "application/json"
    assert "largest accepted is 5.0\xa0MB" in response.json()["detail"]
    assert not Job.objects.exists()


def test_a_body_nested_100000_deep_is_a_json_400(alice_client):
    response = post_json(alice_client, '{"args": ' + "[" * 100_000 + "]" * 100_000 + "}")

    assert response.status_code == 400 and "nest deeper than 400" in response.json()["detail"]


def test_nesting_of_400_levels_is_read(alice_client, replay_gpu, redis_url):
    response = post_json(alice_client, json.dumps({**GOOD, "extra": json.loads("[" * 399 + "]" * 399)}))

    assert response.status_code == 201, response.content


@pytest.mark.parametrize("seed", [-1, 2**32, 2**70])
def test_a_seed_outside_0_to_2_32_is_refused(alice_client, replay_gpu, seed):
    response = post_json(alice_client, json.dumps({**GOOD, "seed": seed}))

    assert response.status_code == 400 and response.json()["seed"]
    assert not Job.objects.exists()


def test_the_largest_seed_is_taken(alice_client, replay_gpu, redis_url):
    response = post_json(alice_client, json.dumps({**GOOD, "seed": 2**32 - 1}))

    assert response.status_code == 201 and Job.objects.get().seed == 2**32 - 1


def test_a_session_post_without_csrf_is_a_json_403(alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)

    response = post_json(client, json.dumps(GOOD))

    assert response.status_code == 403 and response["Content-Type"] == "application/json"
    assert "CSRF" in response.json()["detail"]


# One server for the module: its tests only send it requests, and each start is seconds.
@pytest.fixture(scope="module")
def server_without_database(tmp_path_factory):
    log = tmp_path_factory.mktemp("no-database") / "web.log"
    server = LiveServer(log, {"DATABASE_URL": f"postgres://postgres@127.0.0.1:{free_port()}/gone"})
    yield server
    server.stop()


@pytest.mark.slow
@pytest.mark.parametrize("method, path", [
    ("GET", "/api/workloads/"), ("GET", "/api/records/?device=h200"), ("POST", "/api/jobs/"),
    ("GET", "/api/jobs/"),
])
def test_the_api_answers_503_json_when_the_database_is_unreachable(server_without_database, method, path):
    response = requests.request(method, server_without_database.url + path, json=GOOD,
                                headers={"Authorization": "Token " + "0" * 40}, timeout=30)

    assert response.status_code == 503, response.text
    assert response.headers["Content-Type"] == "application/json"
    assert "database is unreachable" in response.json()["detail"]


@pytest.mark.slow
def test_a_page_answers_503_when_the_database_is_unreachable(server_without_database):
    response = requests.get(server_without_database.url + "/", timeout=30)

    assert response.status_code == 503 and "database is unreachable" in response.text
    assert "Traceback" not in response.text
