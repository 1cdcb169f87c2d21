"""A person in headless Chromium: log in, submit a job to the replay worker, watch it
finish, open the leaderboard and a config diff, download the best config's log.

Needs Debian's chromium and chromium-driver (`apt-get install -y chromium chromium-driver`);
skipped, saying so, only where they are absent.
"""
import gzip
import shutil
import time

import pytest

from engine.logfile import read_records
from jobs_fixtures import REPLAY_QUEUE
from records.importing import import_log

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1280,1600"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="headless Chromium is not installed: apt-get install -y chromium chromium-driver"),
]


@pytest.fixture
def browser(tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.add_experimental_option("prefs", {"download.default_directory": str(tmp_path / "downloads")})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(5)
    yield driver
    driver.quit()


def wait_until(predicate, timeout=60, what="the page"):
    from selenium.common.exceptions import StaleElementReferenceException

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except StaleElementReferenceException:
            pass  # the page redrew between finding an element and reading it: look again
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def text_of(browser, css: str) -> str:
    """The text of the element `css` selects, read again if the page redraws meanwhile."""
    from selenium.webdriver.common.by import By

    found = []
    wait_until(lambda: found.append(browser.find_element(By.CSS_SELECTOR, css).text) or True, timeout=10, what=css)
    return found[-1]


def log_in_as_alice(browser, base_url: str, then: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{base_url}/accounts/login/?next={then}")
    browser.find_element(By.NAME, "username").send_keys("alice")
    browser.find_element(By.NAME, "password").send_keys("alice-password-1")
    browser.find_element(By.CSS_SELECTOR, "form.stacked button[type=submit]").click()


def test_a_person_submits_a_job_watches_it_finish_and_takes_the_best_config(
    browser, live_server, alice, start_worker, recording_path, tmp_path
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    # The recording itself, imported: the leaderboard best the job's best is diffed against.
    with gzip.open(recording_path, "rt") as stream:
        import_log(stream, "c12_synthetic.log")
    start_worker(pace=0.05)

    log_in_as_alice(browser, live_server.url, "/jobs/new/")

    Select(browser.find_element(By.NAME, "template")).select_by_value("conv2d_nchw.cuda")
    Select(browser.find_element(By.NAME, "preset")).select_by_value("C12")
    Select(browser.find_element(By.NAME, "tuner")).select_by_value("xgb")
    budget = browser.find_element(By.NAME, "n_trial")
    budget.clear()
    budget.send_keys("48")
    browser.find_element(By.CSS_SELECTOR, f"input[name=gpus][value='{REPLAY_QUEUE}']").click()
    browser.find_element(By.CSS_SELECTOR, "#job-form button[type=submit]").click()

    assert "/jobs/" in browser.current_url
    seen_trials = set()

    def done():
        seen_trials.add(text_of(browser, ".run .trials"))
        return browser.find_element(By.TAG_NAME, "body").get_attribute("data-job-state") == "done"

    wait_until(done, what="the job to finish on the page")
    # The last poll may update the page between reading the trials and reading the state.
    seen_trials.add(text_of(browser, ".run .trials"))
    assert "48 / 48 trials" in seen_trials and len(seen_trials) > 1, "progress showed without a reload"
    assert browser.find_element(By.CSS_SELECTOR, "svg.convergence polyline")
    assert "replay" in browser.find_element(By.CSS_SELECTOR, ".run h2").text
    best_gflops = float(text_of(browser, ".best-gflops"))
    job_page = browser.current_url

    browser.find_element(By.CSS_SELECTOR, ".download-link").click()
    downloads = tmp_path / "downloads"
    wait_until(lambda: downloads.exists() and any(p.suffix == ".log" for p in downloads.iterdir()),
               what="the best-config download")
    log_file = next(p for p in downloads.iterdir() if p.suffix == ".log")
    (best,) = read_records(log_file.read_text().splitlines())
    assert best.model == REPLAY_QUEUE

    browser.find_element(By.CSS_SELECTOR, ".diff-link").click()
    diff = browser.find_element(By.CSS_SELECTOR, "table.diff").text
    assert REPLAY_QUEUE in diff and "tile_f" in diff

    browser.get(job_page)
    browser.find_element(By.PARTIAL_LINK_TEXT, "conv2d_nchw.cuda").click()
    board = browser.find_element(By.TAG_NAME, "main").text
    assert REPLAY_QUEUE in board and "replay" in board
    assert best_gflops > 0
