"""The portability matrix of the compare-GPUs page, on the hub's convolution caches of four GPUs."""
from __future__ import annotations

import gzip
import json

import pytest
from django.urls import reverse

from records.portability import portability
from tests.hub_data import GPUS, cache_path, caches_for_the_module

pytestmark = pytest.mark.django_db

MODELS = {"A100": "a100", "A4000": "rtxa4000", "MI250X": "mi250x", "W6600": "w6600"}


# Importing the four caches is most of this module's time; its tests only read them.
@pytest.fixture(scope="module")
def convolution(django_db_setup, django_db_blocker):
    with caches_for_the_module(django_db_blocker, "convolution_milo", GPUS) as workload:
        yield workload


def _times() -> dict[str, dict[str, float]]:
    """GPU model -> cache key -> time (ms), error-free entries only, straight from the files."""
    out = {}
    for gpu in GPUS:
        with gzip.open(cache_path("convolution_milo", gpu), "rt") as stream:
            cache = json.load(stream)["cache"]
        out[MODELS[gpu]] = {k: e["time"] for k, e in cache.items() if not isinstance(e["time"], str)}
    return out


def test_each_best_config_is_priced_on_every_gpu_against_that_gpus_best(convolution):
    found = portability(convolution)
    times = _times()
    assert sorted(d.model for d in found.devices) == sorted(MODELS.values())
    for i, row in enumerate(found.rows):
        assert row.cells[i].percent == pytest.approx(100.0)
        key = ",".join(str(v) for v in row.best.knobs.values())
        for device, cell in zip(found.devices, row.cells):
            own = min(times[device.model].values())
            if key in times[device.model]:
                assert cell.percent == pytest.approx(100 * own / times[device.model][key], rel=1e-9)
            else:
                assert cell.percent is None


def test_the_config_best_across_all_gpus_has_the_highest_worst_case(convolution):
    times = _times()
    own = {m: min(t.values()) for m, t in times.items()}
    everywhere = set.intersection(*(set(t) for t in times.values()))
    expected = max(min(own[m] / times[m][k] for m in times) for k in everywhere)
    robust = portability(convolution).robust
    assert robust.worst_percent == pytest.approx(100 * expected, rel=1e-9)
    assert all(robust.worst_percent >= min(c.percent or 0 for c in row.cells) for row in portability(convolution).rows)


def test_the_compare_page_shows_the_matrix_of_all_four_gpus(client, convolution):
    page = client.get(reverse("records:compare_workload", args=[convolution.pk])).content.decode()
    assert "<h2>Portability</h2>" in page and "Best across all" in page
    table = page[page.index('class="portability"'):]
    assert all(model in table[:table.index("</table>")] for model in MODELS.values())
