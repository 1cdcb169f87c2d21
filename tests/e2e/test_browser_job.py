"""A person in headless Chromium: log in, submit a job to the replay worker, watch it
finish, open the leaderboard and a config diff, download the best config's log.

Needs Debian's chromium and chromium-driver (`apt-get install -y chromium chromium-driver`);
skipped, saying so, only where they are absent.
"""
import gzip
import json
import re

import pytest
from browsing import CHROMEDRIVER, CHROMIUM, NO_CHROMIUM, text_of, wait_until

from engine.logfile import read_records
from jobs.models import Job
from jobs_fixtures import REPLAY_QUEUE
from records.importing import import_log

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER), reason=NO_CHROMIUM),
]


def test_a_person_submits_a_job_watches_it_finish_and_takes_the_best_config(
    browser, live_server, alice, start_worker, recording_path, tmp_path
):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    # The recording itself, imported: the leaderboard best the job's best is diffed against.
    with gzip.open(recording_path, "rt") as stream:
        import_log(stream, "c12_synthetic.log")
    start_worker(pace=0.05)

    browser.get(live_server.url + "/accounts/login/?next=/jobs/new/")
    browser.find_element(By.NAME, "username").send_keys("alice")
    browser.find_element(By.NAME, "password").send_keys("alice-password-1")
    browser.find_element(By.CSS_SELECTOR, "form.stacked button[type=submit]").click()

    Select(browser.find_element(By.NAME, "template")).select_by_value("conv2d_nchw.cuda")
    Select(browser.find_element(By.NAME, "preset")).select_by_value("C12")
    Select(browser.find_element(By.NAME, "tuner")).select_by_value("xgb")
    budget = browser.find_element(By.NAME, "n_trial")
    budget.clear()
    budget.send_keys("48")
    browser.find_element(By.CSS_SELECTOR, f"input[name=gpus][value='{REPLAY_QUEUE}']").click()
    browser.find_element(By.CSS_SELECTOR, "#job-form button[type=submit]").click()

    wait_until(lambda: re.search(r"/jobs/\d+/$", browser.current_url), what="the job page")
    job_url = browser.current_url
    seen_trials = set()

    def done():
        seen_trials.add(text_of(browser, ".run .trials"))
        return browser.find_element(By.TAG_NAME, "body").get_attribute("data-job-state") == "done"

    wait_until(done, what="the job to finish on the page")
    # The last poll may update the page between reading the trials and reading the state.
    seen_trials.add(text_of(browser, ".run .trials"))
    assert "48 / 48 trials" in seen_trials and len(seen_trials) > 1, "progress showed without a reload"
    # Nothing on the page still says the job waits (the submit notice is in the past tense).
    assert text_of(browser, "#job-state") == "done" and "queued" not in text_of(browser, "main").lower()
    # The plot holds one point per stored trial (read from the page's data, counted in the DB).
    run = Job.objects.get(pk=int(job_url.rstrip("/").rsplit("/", 1)[1])).runs.get()
    wait_until(lambda: browser.find_element(By.TAG_NAME, "body").get_attribute("data-settled") == "true",
               what="the run to settle")
    plotted = json.loads(browser.find_element(By.ID, "job-plot").get_attribute("data-points"))
    stored = run.records().count()
    assert stored == 48 and plotted == {str(run.pk): stored}
    assert browser.find_element(By.CSS_SELECTOR, "#job-plot canvas")
    # Each latest trial's config index links to its record, a record of this run.
    hrefs = [a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "table.trials td:nth-child(2) a")]
    linked_ids = {int(href.rstrip("/").rsplit("/", 1)[1]) for href in hrefs}
    assert linked_ids and run.records().filter(pk__in=linked_ids).count() == len(linked_ids)
    # Each poll sent only the trials after those the page had; added up, they are all 48, newest first.
    numbers = [td.text for td in browser.find_elements(By.CSS_SELECTOR, "table.trials td:nth-child(1)")]
    assert numbers == [str(n) for n in range(48, 0, -1)]
    # Hovering shows a trial; a click pins it, links its record and adds its knobs.
    ActionChains(browser).move_to_element(browser.find_element(By.CSS_SELECTOR, "#job-plot .u-over")).click().perform()
    tip = browser.find_element(By.CSS_SELECTOR, ".chart-tip")
    wait_until(lambda: "tile_f=" in tip.text, what="the pinned trial's knobs")
    linked = int(tip.find_element(By.CSS_SELECTOR, "a").get_attribute("href").rstrip("/").rsplit("/", 1)[1])
    assert run.records().filter(pk=linked).exists()
    assert "replay" in browser.find_element(By.CSS_SELECTOR, ".run h2").text
    best_gflops = float(browser.find_element(By.CSS_SELECTOR, ".best-gflops").text)
    job_page = browser.current_url

    browser.find_element(By.CSS_SELECTOR, ".download-link").click()
    downloads = tmp_path / "downloads"
    wait_until(lambda: downloads.exists() and any(p.suffix == ".log" for p in downloads.iterdir()),
               what="the best-config download")
    log_file = next(p for p in downloads.iterdir() if p.suffix == ".log")
    (best,) = read_records(log_file.read_text().splitlines())
    assert best.model == REPLAY_QUEUE

    browser.find_element(By.CSS_SELECTOR, ".diff-link").click()
    wait_until(lambda: "/diff/" in browser.current_url, what="the diff")
    diff = browser.find_element(By.CSS_SELECTOR, "table.diff").text
    assert REPLAY_QUEUE in diff and "tile_f" in diff

    browser.get(job_page)
    browser.find_element(By.PARTIAL_LINK_TEXT, "conv2d_nchw.cuda").click()
    wait_until(lambda: "/leaderboard/" in browser.current_url, what="the leaderboard")
    board = browser.find_element(By.TAG_NAME, "main").text
    assert REPLAY_QUEUE in board and "replay" in board
    assert best_gflops > 0
