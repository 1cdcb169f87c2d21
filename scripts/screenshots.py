"""README's screenshots, taken in headless Chromium from a running tunerweb.

    python scripts/screenshots.py --url http://127.0.0.1:8000 --user admin --password PW \
        --job 2 --workload 343 --gpu h200 [--out docs/screenshots] [--only speedups.png ...]

The pictures in docs/screenshots/ were taken from `./tw up` (SQLite) after importing TopHub's
log, the committed H200 tuning logs (docs/benchmarks/conv2d-h200-logs/*.log.gz and
operators-h200-logs/operators.log.gz, unzipped), cuDNN times of C1-C12 from DESIGN.md as a
baselines CSV, and a C12 job (xgb, 250 trials) on the replay worker and a second replay
worker of a synthetic recording. The leaderboard, speedup and compare-GPUs pictures were
retaken (2026-12-01, `--only`) with the H200 baselines (docs/gpu-runs/baselines-h200.log,
`manage.py import_baselines`) and confirmations (docs/benchmarks/confirmed-h200-2026-12-01/
confirm-a.json and confirm-b.json, `manage.py import_confirmations`) imported, whose rounds
give the bars their whiskers. Needs Debian's chromium and chromium-driver, and selenium
(the test extra).
"""
from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-device-scale-factor=1"]


def pages(args) -> list[tuple[str, str, int]]:
    """(file name, path, page height in px)."""
    return [
        ("job.png", f"/jobs/{args.job}/", 1250),
        ("leaderboard.png", f"/leaderboard/{args.workload}/", 1100),
        ("knobs.png", f"/leaderboard/{args.workload}/knobs/?device={args.gpu}", 1000),
        ("speedups.png", f"/speedups/?device={args.gpu}&provider=cudnn", 1000),
        ("roofline.png", f"/roofline/?device={args.gpu}", 900),
        ("compare-gpus.png", f"/compare/{args.workload}/", 900),
        ("submit-job.png", "/jobs/new/", 1100),
    ]


def pin_a_trial(driver) -> None:
    """Click the job plot a third of the way in, so the picture shows a pinned trial and its knobs."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    over = driver.find_element(By.CSS_SELECTOR, "#job-plot .u-over")
    ActionChains(driver).move_to_element_with_offset(over, -over.size["width"] // 6, over.size["height"] // 4).click().perform()
    time.sleep(1)


def main() -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--job", type=int, required=True, help="a finished job to show")
    parser.add_argument("--workload", type=int, required=True, help="a workload with records on several GPUs")
    parser.add_argument("--gpu", default="h200", help="the GPU model of the speedup, roofline and knob pages")
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    parser.add_argument("--only", nargs="+", metavar="NAME", help="take only these pictures (job.png, ...)")
    args = parser.parse_args()

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or shutil.which("chromium-browser")
    for flag in FLAGS:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    try:
        driver.set_window_size(1280, 1000)
        driver.get(f"{args.url}/accounts/login/")
        driver.find_element(By.NAME, "username").send_keys(args.user)
        driver.find_element(By.NAME, "password").send_keys(args.password)
        driver.find_element(By.CSS_SELECTOR, "form.stacked button[type=submit]").click()
        time.sleep(1)
        args.out.mkdir(parents=True, exist_ok=True)
        for name, path, height in pages(args):
            if args.only and name not in args.only:
                continue
            driver.set_window_size(1280, height)
            driver.get(args.url + path)
            time.sleep(2)  # charts draw after DOMContentLoaded; the job page polls once
            if name == "job.png":
                pin_a_trial(driver)
            driver.save_screenshot(str(args.out / name))
            print(f"{args.out / name}: {path}")
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
