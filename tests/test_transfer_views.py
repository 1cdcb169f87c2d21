import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from engine.logfile import canonical_args, pick_best, read_records
from records.importing import import_log
from records.models import Baseline, ImportBatch, MeasurementRecord, Workload

pytestmark = pytest.mark.django_db

C12_ARGS = canonical_args(
    [["TENSOR", [1, 512, 7, 7], "float32"], ["TENSOR", [512, 512, 3, 3], "float32"], [1, 1], [1, 1, 1, 1], [1, 1], "float32"]
)


def tophub_upload(tophub_log) -> SimpleUploadedFile:
    return SimpleUploadedFile("tophub.log", tophub_log.read_bytes(), content_type="text/plain")


def body(response) -> str:
    return b"".join(response.streaming_content).decode()


# Upload page


def test_the_upload_page_needs_a_login(client, tophub_log):
    assert client.get(reverse("records:upload")).status_code == 302
    response = client.post(reverse("records:upload"), {"file": tophub_upload(tophub_log)})
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert MeasurementRecord.objects.count() == 0


def test_the_upload_page_shows_a_form_with_the_size_limit(alice_client, settings):
    settings.TUNERWEB_MAX_UPLOAD_BYTES = 3 * 1024 * 1024
    response = alice_client.get(reverse("records:upload"))
    assert response.status_code == 200
    assert b'enctype="multipart/form-data"' in response.content and b"3.0\xc2\xa0MB" in response.content


def test_a_logged_in_user_uploads_a_log_and_lands_on_its_batch(alice_client, alice, tophub_log):
    response = alice_client.post(reverse("records:upload"), {"file": tophub_upload(tophub_log)}, follow=True)
    batch = ImportBatch.objects.get()
    assert response.redirect_chain[0][0] == reverse("records:batch_detail", args=[batch.pk])
    assert (batch.imported, batch.created_by, batch.source) == (688, alice, "upload")
    assert "688 lines: 688 imported, 0 duplicates" in response.content.decode()


def test_a_gzipped_log_uploads_as_its_lines(alice_client, tophub_log):
    import gzip

    upload = SimpleUploadedFile("tophub.log.gz", gzip.compress(tophub_log.read_bytes()))
    response = alice_client.post(reverse("records:upload"), {"file": upload}, follow=True)
    assert ImportBatch.objects.get().imported == 688
    assert "688 lines: 688 imported, 0 duplicates" in response.content.decode()


def test_after_an_upload_the_batch_page_lists_the_malformed_lines(alice_client, tophub_log):
    content = tophub_log.read_bytes().splitlines(keepends=True)[0] + b"{broken\n"
    response = alice_client.post(reverse("records:upload"), {"file": SimpleUploadedFile("two.log", content)}, follow=True)
    text = response.content.decode()
    assert "2 lines: 1 imported, 0 duplicates, 0 version 0.1 skipped, 1 malformed" in text
    assert "not JSON (Expecting property name enclosed in double quotes at column 2)" in text


def test_the_upload_page_refuses_a_file_over_the_limit(alice_client, settings):
    settings.TUNERWEB_MAX_UPLOAD_BYTES = 100
    response = alice_client.post(reverse("records:upload"), {"file": SimpleUploadedFile("big.log", b"#" * 101)})
    assert response.status_code == 400
    assert "The upload is 101\xa0bytes; the largest accepted is 100\xa0bytes." in response.content.decode()
    assert ImportBatch.objects.count() == 0


def test_an_upload_far_over_the_limit_is_refused_before_its_body_is_read(alice_client, settings):
    settings.TUNERWEB_MAX_UPLOAD_BYTES = 100
    big = SimpleUploadedFile("huge.log", b"#" * (200 * 1024))
    page = alice_client.post(reverse("records:upload"), {"file": big})
    assert page.status_code == 413
    assert "the largest accepted is 100\xa0bytes" in page.content.decode()
    big.seek(0)
    api = alice_client.post("/api/imports/", {"file": big})
    assert api.status_code == 413
    assert "the largest accepted is 100\xa0bytes" in api.json()["detail"]
    assert ImportBatch.objects.count() == 0


def test_the_upload_page_refuses_a_file_that_is_not_a_log(alice_client):
    response = alice_client.post(reverse("records:upload"), {"file": SimpleUploadedFile("cat.png", b"\x89PNG\r\n\x1a\n\x00\x00")})
    assert response.status_code == 400
    assert "cat.png is not a text log" in response.content.decode()
    assert ImportBatch.objects.count() == 0


def test_the_upload_page_checks_csrf(alice, tophub_log):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert client.post(reverse("records:upload"), {"file": tophub_upload(tophub_log)}).status_code == 403


# Baseline upload page

C12_CSV_ARGS = C12_ARGS.replace('"', '""')


def test_the_baseline_page_needs_a_login(client):
    assert client.get(reverse("records:baseline_upload")).status_code == 302


def test_a_logged_in_user_uploads_baselines_and_sees_the_counts(alice_client):
    content = f'task,args,device,provider,cost_us\nconv2d_nchw.cuda,"{C12_CSV_ARGS}",h200,cudnn,129\nx,[],h200,mkl,1\n'
    response = alice_client.post(reverse("records:baseline_upload"), {"file": SimpleUploadedFile("cudnn.csv", content.encode())})
    text = response.content.decode()
    assert response.status_code == 200 and "2 rows: 1 baselines saved, 1 problems" in text
    assert "provider &#x27;mkl&#x27; is not one of" in text
    assert Baseline.objects.get().provider == "cudnn"


def test_the_baseline_page_explains_an_unreadable_file(alice_client):
    response = alice_client.post(reverse("records:baseline_upload"), {"file": SimpleUploadedFile("b.xlsx", b"PK")})
    assert response.status_code == 400 and "cannot tell the format of" in response.content.decode()


# Downloads


def test_the_best_download_for_c12_holds_what_pick_best_picks(client, tophub_log):
    import_log(tophub_log.open(), "tophub.log")
    workload = Workload.objects.get(task_name="conv2d_nchw_winograd.cuda", args_json=C12_ARGS)
    response = client.get(reverse("records:download_best"), {"workload": workload.pk})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    assert f'filename="tunerweb-best-workload-{workload.pk}.log"' in response["Content-Disposition"]
    expected = {k: r for k, r in pick_best(read_records(tophub_log.open())).items() if k[1:] == ("conv2d_nchw_winograd.cuda", C12_ARGS)}
    assert sorted(read_records(body(response).splitlines()), key=lambda r: r.model) == sorted(expected.values(), key=lambda r: r.model)


def test_the_records_download_filters_by_device_and_task(client, tophub_log):
    import_log(tophub_log.open(), "tophub.log")
    response = client.get(reverse("records:download_records"), {"device": "tx2", "task": "depthwise_conv2d_nchw.cuda"})
    records = read_records(body(response).splitlines())
    assert records and {(r.model, r.task_name) for r in records} == {("tx2", "depthwise_conv2d_nchw.cuda")}
    assert 'filename="tunerweb-records-task-depthwise_conv2d_nchw-cuda-gpu-tx2.log"' in response["Content-Disposition"]


def test_downloads_explain_bad_filters(client):
    assert client.get(reverse("records:download_best"), {"workload": "x"}).status_code == 400
    response = client.get(reverse("records:download_records"), {"device": "nope"})
    assert response.status_code == 404 and response.content.decode() == "no GPU model 'nope'\n"


def test_downloads_need_a_login_when_reads_are_not_public(client, settings, alice):
    settings.TUNERWEB_PUBLIC_READ = False
    assert client.get(reverse("records:download_best")).status_code == 302
    client.force_login(alice)
    assert client.get(reverse("records:download_best")).status_code == 200


# API


@pytest.fixture
def token_client(alice) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=alice).key}")
    return api


def test_the_api_imports_a_log_with_a_token(token_client, alice, tophub_log):
    response = token_client.post("/api/imports/", {"file": tophub_upload(tophub_log)}, format="multipart")
    assert response.status_code == 201
    data = response.json()
    assert (data["lines"], data["imported"], data["duplicates"], data["malformed"], data["problems"]) == (688, 688, 0, 0, [])
    assert ImportBatch.objects.get(pk=data["batch"]).created_by == alice


def test_the_api_import_needs_credentials(tophub_log):
    response = APIClient().post("/api/imports/", {"file": tophub_upload(tophub_log)}, format="multipart")
    assert response.status_code in (401, 403) and MeasurementRecord.objects.count() == 0


def test_the_api_refuses_a_file_that_is_not_a_log_or_too_big(token_client, settings):
    response = token_client.post("/api/imports/", {"file": SimpleUploadedFile("x.bin", b"\x00\x01\x02")}, format="multipart")
    assert response.status_code == 400 and "is not a text log" in response.json()["detail"]
    settings.TUNERWEB_MAX_UPLOAD_BYTES = 10
    response = token_client.post("/api/imports/", {"file": SimpleUploadedFile("x.log", b"#" * 11)}, format="multipart")
    assert response.status_code == 400 and "the largest accepted is 10" in response.json()["detail"]
    assert ImportBatch.objects.count() == 0


def test_the_api_imports_baselines(token_client):
    rows = [{"task": "conv2d_nchw.cuda", "args": json.loads(C12_ARGS), "device": "h200", "provider": "cudnn", "cost_us": 129}]
    upload = SimpleUploadedFile("b.json", json.dumps(rows).encode())
    response = token_client.post("/api/baselines/import/", {"file": upload}, format="multipart")
    assert response.status_code == 201 and response.json()["saved"] == 1
    response = token_client.post("/api/baselines/import/", {"file": SimpleUploadedFile("b.json", b"[]x"), "format": "json"}, format="multipart")
    assert response.status_code == 400 and "not JSON" in response.json()["detail"]


def test_the_api_exports_best_and_records_as_text(tophub_log):
    import_log(tophub_log.open(), "tophub.log")
    api = APIClient()
    best = api.get("/api/export/best/", {"device": "v100"}, HTTP_ACCEPT="text/plain")
    assert best.status_code == 200 and best["Content-Type"].startswith("text/plain")
    assert len(read_records(body(best).splitlines())) == 1
    records = api.get("/api/export/records/", {"task": "conv2d_transpose_nchw.cuda"})
    assert len(read_records(body(records).splitlines())) == 1
    assert api.get("/api/export/best/", {"batch": "x"}).status_code == 400


def test_the_transfer_endpoints_are_in_the_schema(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert {"/api/imports/", "/api/baselines/import/", "/api/export/best/", "/api/export/records/"} <= set(schema["paths"])
    assert "multipart/form-data" in schema["paths"]["/api/imports/"]["post"]["requestBody"]["content"]
