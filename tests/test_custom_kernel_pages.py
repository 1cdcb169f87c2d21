"""Custom kernels on the web: staff add them (page and API), anyone logged in reads and tunes them,
the source is shown escaped, and custom jobs run only kernels staff added."""
import copy
import json

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from engine.ops import TEMPLATES
from engine.workloads import PRESETS
from jobs.custom_kernels import MAX_SOURCE_CHARS, MAX_SPEC_CHARS, add_custom_kernel
from jobs.models import CustomKernel, Job
from jobs.submission import check_request
from jobs.tokens import issue_token
from records.models import Workload

pytestmark = pytest.mark.django_db

SOURCE = r"""
extern "C" __global__ void saxpy(const float* x, const float* y, float* out) {
    const int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < N) out[i] = A * x[i] + y[i];
}
"""
SPEC = {
    "kernel_name": "saxpy",
    "sizes": {"N": 4096, "A": 2},
    "tune_params": [["block_size_x", [64, 128, 256]]],
    "restrictions": ["block_size_x >= 64"],
    "block": ["block_size_x"],
    "grid": ["ceil_div(N, block_size_x)"],
    "arguments": [{"name": "x", "shape": ["N"], "dtype": "float32"},
                  {"name": "y", "shape": ["N"], "dtype": "float32"},
                  {"name": "out", "shape": ["N"], "dtype": "float32", "output": True}],
    "reference": {"numpy": "A * x + y"},
    "flops": "2 * N",
}
HOSTILE = "</code><script>alert(1)</script>"


def full_spec(**changes):
    spec = copy.deepcopy({**SPEC, "source": SOURCE})
    spec.update(changes)
    return spec


def form_data(name="saxpy", source=SOURCE, **changes):
    rest = {**copy.deepcopy(SPEC), **changes}
    return {"name": name, "source": source, "spec": json.dumps(rest)}


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user("sam", password="sam-password-1", is_staff=True)


@pytest.fixture
def staff_client(client, staff):
    client.force_login(staff)
    return client


@pytest.fixture
def kernel(staff):
    return add_custom_kernel(staff, "saxpy", full_spec())


def test_staff_add_a_kernel_that_is_stored_as_a_custom_workload(staff_client):
    response = staff_client.post(reverse("jobs:custom_kernel_add"), form_data())

    kernel = CustomKernel.objects.get()
    assert response.status_code == 302 and response.url == kernel.get_absolute_url()
    assert kernel.workload.task_name == "custom" and kernel.workload.args == [full_spec()]
    assert kernel.workload.flops == 2 * 4096


def test_a_bad_spec_shows_the_spec_error_next_to_its_field_and_stores_nothing(staff_client):
    response = staff_client.post(reverse("jobs:custom_kernel_add"), form_data(block=["block_size_y"]))

    assert response.status_code == 400
    errors = response.context["form"].errors
    assert "custom kernel spec: block[0]" in errors["spec"][0] and "source" not in errors
    assert not CustomKernel.objects.exists() and not Workload.objects.exists()


def test_a_source_that_lacks_the_kernel_name_is_reported_next_to_the_source(staff_client):
    response = staff_client.post(reverse("jobs:custom_kernel_add"), form_data(source=SOURCE.replace("saxpy", "axpy")))

    assert response.status_code == 400
    errors = response.context["form"].errors
    assert "does not mention the kernel_name 'saxpy'" in errors["source"][0] and "spec" not in errors
    assert not CustomKernel.objects.exists()


def test_a_source_over_the_size_cap_is_refused_by_the_form(staff_client):
    padding = "// " + "x" * MAX_SOURCE_CHARS + "\n"
    response = staff_client.post(reverse("jobs:custom_kernel_add"), form_data(source=SOURCE + padding))

    assert response.status_code == 400
    assert "at most 200000 characters" in response.context["form"].errors["source"][0]
    assert not Workload.objects.exists()


def test_a_spec_over_the_size_cap_is_refused_by_the_api(client, staff):
    padding = "// " + "x" * MAX_SPEC_CHARS + "\n"
    response = client.post("/api/custom-kernels/", {"name": "big", "spec": full_spec(source=SOURCE + padding)},
                           content_type="application/json", HTTP_AUTHORIZATION=f"Token {issue_token(staff)}")

    assert response.status_code == 400
    assert f"more than {MAX_SPEC_CHARS}" in response.json()["spec"][0]
    assert not Workload.objects.exists()


def test_the_same_name_or_the_same_spec_is_not_added_twice(staff_client, kernel):
    again = staff_client.post(reverse("jobs:custom_kernel_add"), form_data())
    renamed = staff_client.post(reverse("jobs:custom_kernel_add"), form_data(name="saxpy 2"))

    assert "already exists" in again.context["form"].errors["name"][0]
    assert "already stored, as the custom kernel 'saxpy'" in renamed.context["form"].errors["spec"][0]
    assert CustomKernel.objects.count() == 1


def test_alice_who_is_not_staff_cannot_add_a_kernel(alice_client):
    assert alice_client.get(reverse("jobs:custom_kernel_add")).status_code == 403
    assert alice_client.post(reverse("jobs:custom_kernel_add"), form_data()).status_code == 403
    assert not CustomKernel.objects.exists()


def test_an_anonymous_visitor_is_sent_to_log_in(client, kernel):
    for url in (reverse("jobs:custom_kernel_add"), kernel.get_absolute_url(), reverse("jobs:custom_kernels")):
        response = client.get(url)
        assert response.status_code == 302 and response.url.startswith(reverse("login"))


def test_staff_add_a_kernel_through_the_api_with_a_token(client, staff):
    response = client.post("/api/custom-kernels/", {"name": "saxpy", "spec": full_spec()}, content_type="application/json",
                           HTTP_AUTHORIZATION=f"Token {issue_token(staff)}")

    assert response.status_code == 201
    kernel = CustomKernel.objects.get()
    assert response.json()["id"] == kernel.pk and kernel.added_by == staff


def test_the_api_names_the_spec_field_that_is_wrong(client, staff):
    response = client.post("/api/custom-kernels/", {"name": "saxpy", "spec": full_spec(tune_params=[])},
                           content_type="application/json", HTTP_AUTHORIZATION=f"Token {issue_token(staff)}")

    assert response.status_code == 400
    assert "custom kernel spec: tune_params" in response.json()["spec"][0]
    assert not CustomKernel.objects.exists()


def test_the_api_refuses_alice_and_anonymous_callers(client, alice):
    as_alice = client.post("/api/custom-kernels/", {"name": "saxpy", "spec": full_spec()},
                           content_type="application/json", HTTP_AUTHORIZATION=f"Token {issue_token(alice)}")
    anonymous = client.post("/api/custom-kernels/", {"name": "saxpy", "spec": full_spec()},
                            content_type="application/json")

    assert as_alice.status_code == 403 and anonymous.status_code == 401
    assert not CustomKernel.objects.exists()


def test_a_hostile_source_is_shown_escaped(alice_client, staff):
    source = SOURCE + f"// {HOSTILE}\n"
    kernel = add_custom_kernel(staff, "hostile", full_spec(source=source))

    html = alice_client.get(kernel.get_absolute_url()).content.decode()

    assert HOSTILE not in html and "<script>" not in html
    assert "&lt;/code&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_the_kernel_page_shows_parameters_restrictions_sizes_and_a_tune_link(alice_client, kernel):
    response = alice_client.get(kernel.get_absolute_url())

    html = response.content.decode()
    assert response.status_code == 200
    assert "block_size_x" in html and "64, 128, 256" in html and "block_size_x &gt;= 64" in html
    assert "4096" in html and "3 configs" in html
    tune = f'{reverse("jobs:submit")}?template=custom&amp;custom_kernel={kernel.pk}'
    assert tune in html


def test_the_tune_link_prefills_the_submit_form(alice_client, kernel):
    response = alice_client.get(reverse("jobs:submit"), {"template": "custom", "custom_kernel": kernel.pk})

    html = response.content.decode()
    assert '<option value="custom" selected>custom</option>' in html
    assert f'<option value="{kernel.pk}" selected>saxpy</option>' in html


def test_the_submit_form_offers_every_template_and_every_preset(alice_client, kernel):
    form = alice_client.get(reverse("jobs:submit")).context["form"]

    assert {value for value, _ in form.fields["template"].choices} == set(TEMPLATES)
    assert {"conv2d_nchw.cuda", "conv2d_no_batching", "depthwise_conv2d_nchw.cuda", "gemm", "broadcast_nchw",
            "custom"} <= set(TEMPLATES)
    offered = {value for _group, options in form.fields["preset"].choices[1:] for value, _ in options}
    assert offered == set(PRESETS)
    assert {"G1", "G5", "D9", "C12", "B-exp-a"} <= offered
    assert list(form.fields["custom_kernel"].queryset) == [kernel]


def custom_request(args):
    return dict(template="custom", args=args, tuner="random", n_trial=10, gpus=["h200"])


def test_a_custom_job_for_a_stored_kernel_passes_the_workload_rules(kernel):
    with pytest.raises(ValidationError) as caught:
        check_request(**custom_request([full_spec()]))

    # No GPU is online in this test: only the GPU rule may fail, never the workload's.
    assert set(caught.value.message_dict) == {"gpus"}


def test_a_custom_job_for_a_spec_staff_did_not_add_is_refused(kernel):
    with pytest.raises(ValidationError) as caught:
        check_request(**custom_request([full_spec(sizes={"N": 8192, "A": 2})]))

    assert "only a custom kernel that staff added" in caught.value.message_dict["args"][0]


def test_a_custom_job_with_a_broken_spec_gets_the_spec_error(kernel):
    with pytest.raises(ValidationError) as caught:
        check_request(**custom_request([full_spec(grid=[])]))

    assert "custom kernel spec: grid" in caught.value.message_dict["args"][0]


def test_the_form_takes_a_custom_job_s_args_from_the_chosen_kernel(alice_client, kernel):
    response = alice_client.post(reverse("jobs:submit"), {
        "template": "custom", "custom_kernel": kernel.pk, "tuner": "random", "n_trial": 10, "gpus": ["h200"],
    })

    errors = response.context["form"].errors
    assert response.status_code == 400 and set(errors) == {"gpus"}
    assert not Job.objects.exists()


def test_a_custom_kernel_with_another_template_is_refused(alice_client, kernel):
    response = alice_client.post(reverse("jobs:submit"), {
        "template": "gemm", "preset": "G3", "custom_kernel": kernel.pk, "tuner": "random", "n_trial": 10,
        "gpus": ["h200"],
    })

    assert "tuned with the custom template" in response.context["form"].errors["custom_kernel"][0]


def test_the_kernel_list_sorts_by_name(staff_client, staff):
    client = staff_client
    add_custom_kernel(staff, "saxpy", full_spec())
    add_custom_kernel(staff, "axpy", full_spec(sizes={"N": 8192, "A": 2}))  # another spec of the same kernel
    url = reverse("jobs:custom_kernels")
    html = client.get(url, {"sort": "name"}).content.decode()
    assert html.index(">axpy</a>") < html.index(">saxpy</a>")
    html = client.get(url, {"sort": "-name"}).content.decode()
    assert html.index(">saxpy</a>") < html.index(">axpy</a>")
    assert client.get(url, {"sort": "source"}).status_code == 400
