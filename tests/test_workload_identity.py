"""Workloads are told apart by a digest of their canonical args and keep the args whole, so
args of any length store on PostgreSQL as on SQLite: a custom kernel with a 150 KB source
(stored directly, through the staff form and through the API) and the migration that
brought the digest in over existing rows."""
import hashlib
import random

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse

from engine.logfile import canonical_args
from jobs.custom_kernels import add_custom_kernel, stored_kernel_for
from jobs.models import CustomKernel
from jobs.tokens import issue_token
from records.models import Workload
from test_custom_kernel_pages import SOURCE, form_data, full_spec, staff  # noqa: F401

pytestmark = pytest.mark.django_db


def large_source(chars: int) -> str:
    """A realistic source: the kernel, then many distinct helper functions (text that
    does not compress away, as a real one does not)."""
    rng = random.Random(1)
    helpers = []
    while sum(map(len, helpers)) < chars - len(SOURCE):
        n = len(helpers)
        helpers.append(f"__device__ float helper_{n}(float v) {{ return v * {rng.random():.9f}f + {rng.randint(0, 10**9)}; }}\n")
    return "".join(helpers) + SOURCE


def test_a_custom_kernel_with_a_150_kb_source_is_stored_found_and_shown(staff, client):
    spec = full_spec(source=large_source(150_000))
    assert len(spec["source"]) >= 150_000

    kernel = add_custom_kernel(staff, "big", spec)

    assert stored_kernel_for([spec]) == kernel
    assert kernel.workload.args == [spec]
    client.force_login(staff)
    assert client.get(reverse("jobs:custom_kernel", args=[kernel.pk])).status_code == 200


@pytest.mark.parametrize("through", ["form", "api"])
def test_staff_add_a_150_kb_kernel_through_the_form_and_the_api(staff, client, through):
    source = large_source(150_000)
    if through == "form":
        client.force_login(staff)
        response = client.post(reverse("jobs:custom_kernel_add"), form_data(name="big", source=source))
        assert response.status_code == 302, response.content[-2000:]
    else:
        response = client.post("/api/custom-kernels/", {"name": "big", "spec": full_spec(source=source)},
                               content_type="application/json", HTTP_AUTHORIZATION=f"Token {issue_token(staff)}")
        assert response.status_code == 201, response.content[-2000:]

    kernel = CustomKernel.objects.get()
    assert kernel.workload.args[0]["source"] == source


def test_workloads_that_differ_only_in_long_args_are_two(db):
    catalog = Workload.objects.catalog()
    a, _ = catalog.workload("t", [{"text": "a" * 50_000 + large_source(5_000)}])
    b, _ = catalog.workload("t", [{"text": "a" * 50_000 + large_source(5_000) + "b"}])
    again, _ = Workload.objects.catalog().workload("t", [{"text": "a" * 50_000 + large_source(5_000)}])

    assert a.pk != b.pk and again.pk == a.pk
    assert a.args_digest == hashlib.sha256(a.args_json.encode()).hexdigest()


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_existing_workloads_their_digest():
    executor = MigrationExecutor(connection)
    executor.migrate([("records", "0007_fill_conv2d_bytes_moved")])
    old_apps = executor.loader.project_state([("records", "0007_fill_conv2d_bytes_moved")]).apps
    args_json = canonical_args([["TENSOR", [1, 512, 7, 7], "float32"]])
    pk = old_apps.get_model("records", "Workload").objects.create(task_name="conv2d_nchw.cuda", args_json=args_json).pk

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    workload = Workload.objects.get(pk=pk)
    assert workload.args_digest == hashlib.sha256(args_json.encode()).hexdigest()
    assert Workload.find("conv2d_nchw.cuda", [["TENSOR", [1, 512, 7, 7], "float32"]]) == workload
