"""A person in headless Chromium tunes ResNet-18 as one network job on two replay workers
and watches the page draw each task and the network's estimate against cuDNN's.

Needs Debian's chromium and chromium-driver; skipped, saying so, only where they are absent.
"""
from pathlib import Path

import pytest

from browsing import CHROMEDRIVER, CHROMIUM, NO_CHROMIUM, log_in, text_of, texts_of, wait_until
from jobs_fixtures import recording_path, redis_url, resnet18_recording, start_worker  # noqa: F401
from records.baselines import import_baselines

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER), reason=NO_CHROMIUM),
]
BASELINES = Path(__file__).resolve().parents[2] / "docs" / "gpu-runs" / "baselines-h200.log"


def test_a_person_tunes_a_network_and_sees_every_task_and_the_vendors_time(
    browser, live_server, alice, start_worker, resnet18_recording
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    with BASELINES.open("rb") as stream:  # the H200's cuDNN times of C1–C12, which the replay stands for
        import_baselines(stream, "log", file_name=BASELINES.name)
    for slot in range(2):
        start_worker(pace=0.02, recording=resnet18_recording, slot=slot)

    log_in(browser, live_server, next_path="/jobs/network/new/")

    Select(browser.find_element(By.NAME, "network")).select_by_value("resnet18")
    Select(browser.find_element(By.NAME, "tuner")).select_by_value("random")
    for name, value in (("n_trial", "128"), ("round_trials", "8")):
        field = browser.find_element(By.NAME, name)
        field.clear()
        field.send_keys(value)
    browser.find_element(By.CSS_SELECTOR, "input[name=gpus][value='h200-replay']").click()
    browser.find_element(By.CSS_SELECTOR, "#network-job-form button[type=submit]").click()

    wait_until(lambda: "/jobs/network/" in browser.current_url and "/new/" not in browser.current_url, what="the job page")
    seen = set()

    def done():
        seen.add(text_of(browser, ".gpu .trials"))
        return browser.find_element(By.TAG_NAME, "body").get_attribute("data-job-state") == "done"

    wait_until(done, timeout=120, what="the network job to finish on the page")
    seen.add(text_of(browser, ".gpu .trials"))
    assert "128 / 128 trials given out" in seen and len(seen) > 1, "progress showed without a reload"
    assert texts_of(browser, "table.tasks tbody tr td:first-child") == [f"C{i}" for i in range(1, 13)]
    assert float(text_of(browser, ".estimate")) > 0 and float(text_of(browser, ".vendor-estimate")) > 0
    assert browser.find_element(By.CSS_SELECTOR, "svg.timeline polyline")
    assert "replay" in browser.find_element(By.CSS_SELECTOR, ".gpu h2").text
