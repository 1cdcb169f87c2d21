"""Plots, sorting, comparisons and the API docs in headless Chromium against a running server.

Needs Debian's chromium and chromium-driver; skipped, saying so, only where they are absent.
"""
import json

import pytest
from browsing import CHROMEDRIVER, CHROMIUM, NO_CHROMIUM, click_and_wait, log_in, texts_of, wait_until

from jobs.models import JobRun, State
from jobs.submission import check_request, submit_job
from jobs_fixtures import REPLAY_QUEUE
from tests.factories import C9_ARGS, conv2d_entity, make_baseline, make_device, make_record, make_workload

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER), reason=NO_CHROMIUM),
]


def by(css):
    from selenium.webdriver.common.by import By

    return By.CSS_SELECTOR, css


def ticked_ids(browser) -> list[int]:
    return [int(box.get_attribute("value")) for box in browser.find_elements(*by("table.records input[name=r]"))]


@pytest.fixture
def records():
    v100, h200 = make_device("v100"), make_device("h200")
    workload = make_workload()
    return workload, [
        make_record(workload, v100, 300e-6, entity=conv2d_entity(tile_rc=(-1, 16))),
        make_record(workload, h200, 100e-6),
        make_record(workload, v100, 200e-6, entity=conv2d_entity(auto_unroll_max_step=1500)),
    ]


def test_clicking_a_column_header_sorts_the_table_and_puts_the_sort_in_the_url(browser, live_server, records):
    _, (slow, fast, middle) = records
    browser.get(live_server.url + "/records/")
    assert ticked_ids(browser) == [fast.pk, middle.pk, slow.pk]

    click_and_wait(browser, "a.sort[data-sort=time]", "sort=time")  # ascending: what it was
    click_and_wait(browser, "a.sort[data-sort=time]", "sort=-time")  # then descending
    assert ticked_ids(browser) == [slow.pk, middle.pk, fast.pk]
    assert browser.find_element(*by("a.sort[data-sort=time] + .arrow")).text == "▼"

    click_and_wait(browser, "a.sort[data-sort=gpu]", "sort=gpu")
    assert [text.split()[0] for text in texts_of(browser, "table.records tbody td:nth-child(5)")] == ["h200", "v100", "v100"]


def test_the_leaderboard_sorts_its_ranked_configs_by_a_clicked_column(browser, live_server, records):
    workload, (slow, fast, middle) = records
    browser.get(f"{live_server.url}/leaderboard/{workload.pk}/")

    def indexes():
        return [int(text) for text in texts_of(browser, "table.standings tbody td:nth-child(3)")]

    assert indexes() == [fast.config_index, middle.config_index, slow.config_index]
    click_and_wait(browser, "table.standings a.sort[data-sort=median]", "sort=median")
    click_and_wait(browser, "table.standings a.sort[data-sort=median]", "sort=-median")
    assert indexes() == [slow.config_index, middle.config_index, fast.config_index]
    click_and_wait(browser, "table.bests a.sort[data-sort=gpu]", "best_sort=gpu")
    click_and_wait(browser, "table.bests a.sort[data-sort=gpu]", "best_sort=-gpu")
    assert [text.split()[0] for text in texts_of(browser, "table.bests tbody td:nth-child(2)")] == ["v100", "h200"]
    assert indexes() == [slow.config_index, middle.config_index, fast.config_index]  # the other table keeps its order


def test_ticked_records_compare_all_at_once_with_a_permalink(browser, live_server, records):
    workload, (slow, fast, middle) = records
    browser.get(f"{live_server.url}/records/?workload={workload.pk}")
    for record in (fast, slow, middle):
        browser.find_element(*by(f"input[name=r][value='{record.pk}']")).click()
    click_and_wait(browser, "button.compare-button", "/compare/records/")

    shown = [int(th.get_attribute("data-record")) for th in browser.find_elements(*by("th.record"))]
    assert shown == [fast.pk, middle.pk, slow.pk]  # in the table's order, the fastest first
    differing = [row.find_element(*by("th")).text for row in browser.find_elements(*by("tr.differs"))]
    assert differing == ["tile_rc", "auto_unroll_max_step"]
    ratios = [td.text for td in browser.find_elements(*by("td.ratio"))]
    assert ratios == ["1", "2.00×", "3.00×"]
    permalink = browser.find_element(*by("a.permalink")).get_attribute("href")
    browser.get(permalink)
    assert [int(th.get_attribute("data-record")) for th in browser.find_elements(*by("th.record"))] == shown


def test_a_diff_of_one_config_written_both_ways_shows_no_differing_knob(browser, live_server):
    v100 = make_device("v100")
    workload = make_workload()
    tophub = make_record(workload, v100, 100e-6, entity=conv2d_entity(tile_f=(4, 8, 16, 1), tile_rc=(64, 8), tile_ry=(1, 3), tile_rx=(1, 3)))
    ours = make_record(workload, v100, 100e-6, entity=conv2d_entity(tile_f=(-1, 8, 16, 1)))

    browser.get(f"{live_server.url}/diff/?a={tophub.pk}&b={ours.pk}")
    assert browser.find_elements(*by("table.diff tr.differs")) == []
    assert "0 of 8 knobs differ" in browser.find_element(*by("p.verdict")).text


def test_the_api_docs_render_with_the_network_cut_off(offline_browser, live_server):
    offline_browser.get(live_server.url.replace("127.0.0.1", "localhost") + "/api/docs/")
    wait_until(lambda: offline_browser.find_elements(*by(".swagger-ui .info .title")), what="Swagger UI to render")
    assert "tunerweb API" in offline_browser.find_element(*by(".swagger-ui .info .title")).text
    wait_until(lambda: offline_browser.find_elements(*by(".opblock")), what="the API's operations")
    # Nothing came from outside: every resource the page loaded was ours.
    loaded = offline_browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert loaded and all(url.startswith(live_server.url.replace("127.0.0.1", "localhost")) for url in loaded)


def test_the_speedup_page_draws_a_bar_per_workload_above_the_table(browser, live_server):
    h200 = make_device("h200")
    for args, tuned, vendor in [(None, 100e-6, 150e-6), (C9_ARGS, 50e-6, 40e-6)]:
        workload = make_workload(args=args)
        make_record(workload, h200, tuned)
        make_baseline(workload, h200, vendor)
    # Confirmation rounds of C9's best give its bar an interval; C12's one measurement none.
    make_record(workload, h200, costs=[48e-6, 50e-6, 52e-6], config_index=7, kind="confirmation", rounds=3)
    browser.get(f"{live_server.url}/speedups/?device=h200&provider=cudnn")
    wait_until(lambda: browser.find_element(*by("#speedup-chart")).get_attribute("data-bars") == "2", what="the bars")
    wait_until(lambda: browser.find_element(*by("#speedup-chart")).get_attribute("data-whiskers") == "1", what="a whisker")
    chart = browser.find_element(*by("#speedup-chart"))
    assert chart.location["y"] < browser.find_element(*by("table.speedups")).location["y"]
    assert browser.find_element(*by("strong.geomean")).text == "1.10×"  # √(1.5 × 0.8)


def test_after_cancel_the_job_page_keeps_polling_until_the_run_settled(
    browser, live_server, alice, start_worker, recording_path
):
    start_worker(pace=0.2)
    request = check_request(template="conv2d_nchw.cuda", preset="C12", tuner="random", n_trial=200, gpus=[REPLAY_QUEUE])
    job = submit_job(alice, request).job
    log_in(browser, live_server, next_path=f"/jobs/{job.pk}/")
    wait_until(lambda: JobRun.objects.get(job=job).records().count() >= 8, what="some trials")

    browser.find_element(*by("#cancel-form button")).click()
    wait_until(lambda: browser.find_element(*by("body")).get_attribute("data-settled") == "true",
               timeout=60, what="the cancelled run to settle")
    run = JobRun.objects.get(job=job)
    assert run.state == State.CANCELLED
    plotted = json.loads(browser.find_element(*by("#job-plot")).get_attribute("data-points"))
    assert plotted == {str(run.pk): run.records().count()}
    assert browser.find_element(*by(".run .trials")).text.startswith(f"{run.records().count()} / 200")


def test_one_workload_across_gpus_draws_a_bar_per_gpu(browser, live_server, records):
    workload, _ = records
    browser.get(f"{live_server.url}/compare/{workload.pk}/")
    wait_until(lambda: browser.find_element(*by("#workload-chart")).get_attribute("data-bars") == "2", what="the bars")
