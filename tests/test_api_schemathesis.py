"""A bounded schemathesis run against the schema the app serves: every operation, examples
drawn from the schema, each response checked for server errors and against the schema (body
and content type). Kept short: a few examples an operation, a small set of real records."""
import io
import itertools

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings

import schemathesis
from schemathesis.checks import content_type_conformance, not_a_server_error, response_schema_conformance
from jobs.tokens import issue_token
from module_rows import rows_for_the_module
from records.models import Baseline, Device, Workload
from tunerweb.wsgi import application

schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application)
EXAMPLES = 12


@pytest.fixture
def keep_the_test_connection():
    """Requests through the WSGI app close the database connection as they start and
    finish; the test's transaction lives on it, so, as Django's test client does, they must not."""
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


@pytest.fixture(scope="module")
def records_and_token(tophub_log, tmp_path_factory, django_db_setup, django_db_blocker):
    """Sixty TopHub records, a cuDNN baseline and a GPU model with a dot: lists and pages with
    rows; and a user's API token. Made once: each operation's run is a test of its own."""
    part = tmp_path_factory.mktemp("schemathesis") / "part.log"
    with tophub_log.open() as lines:
        part.write_text("".join(itertools.islice(lines, 60)))
    with rows_for_the_module(django_db_blocker):
        call_command("import_records", str(part), stdout=io.StringIO())
        Baseline.objects.create(workload=Workload.objects.first(), device=Device.objects.first(), provider="cudnn", cost=1e-4)
        Device.objects.create(model="a100-sxm4.80gb")  # a dot in a model name, as slugs from logs may have
        yield issue_token(get_user_model().objects.create_user("alice", password="alice-password-1"))


@pytest.fixture
def some_records(records_and_token, keep_the_test_connection):
    return records_and_token


@pytest.mark.django_db
@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_the_api_keeps_to_its_schema(case, some_records):
    case.call_and_validate(
        headers={"Authorization": f"Token {some_records}"},
        checks=[not_a_server_error, response_schema_conformance, content_type_conformance],
    )
