"""A Kernel Tuner kernel's pages work as any workload's: leaderboard, diff, compare, speedups, downloads."""
from __future__ import annotations

import pytest
from django.urls import reverse

from engine.logfile import read_records
from records.models import ImportBatch
from tests.hub_data import best_records, caches_for_the_module

pytestmark = pytest.mark.django_db


# Importing the two caches is most of this module's time; its tests only read them.
@pytest.fixture(scope="module")
def dedispersion(django_db_setup, django_db_blocker):
    with caches_for_the_module(django_db_blocker, "dedispersion_milo", ("A100", "W6600")) as workload:
        yield workload


def test_every_page_of_the_kernel_renders(client, dedispersion):
    a100, w6600 = sorted(best_records(dedispersion), key=lambda r: r.device.model)
    pages = [
        reverse("records:home"),
        reverse("records:leaderboard", args=[dedispersion.pk]),
        reverse("records:compare_workload", args=[dedispersion.pk]),
        f"{reverse('records:diff')}?a={a100.pk}&b={w6600.pk}",
        f"{reverse('records:compare_devices')}?a=a100&b=w6600",
        f"{reverse('records:speedups')}?device=a100&provider=default-config",
        reverse("records:record_detail", args=[a100.pk]),
        reverse("records:batch_detail", args=[ImportBatch.objects.first().pk]),
        reverse("records:devices"),
    ]
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, (url, response.content[:500])
    leaderboard = client.get(pages[1]).content.decode()
    assert "dedispersion_kernel" in leaderboard and "block_size_x=" in leaderboard
    diff = client.get(pages[3]).content.decode()
    assert "tile_size_x" in diff


def test_the_best_configs_download_as_an_autotvm_log(client, dedispersion):
    response = client.get(f"{reverse('records:download_best')}?workload={dedispersion.pk}")
    best = read_records(b"".join(response.streaming_content).decode().splitlines())
    assert sorted(r.model for r in best) == ["a100", "w6600"]
    assert {r.config_index for r in best} == {r.config_index for r in best_records(dedispersion)}
