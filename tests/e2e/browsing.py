"""Headless Chromium for the browser tests: starting it (online or with the network cut
off), waiting for a page, logging in."""
import shutil
import time
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1280,1600"]
# No name resolves but localhost: a page that needs the internet (a CDN) cannot load it.
OFFLINE_FLAGS = ["--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost"]
NO_CHROMIUM = "headless Chromium is not installed: apt-get install -y chromium chromium-driver"


def chromium(downloads: Path, extra_flags=()):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*CHROME_FLAGS, *extra_flags]:
        options.add_argument(flag)
    options.add_experimental_option("prefs", {"download.default_directory": str(downloads)})
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(5)
    return driver


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


def texts_of(browser, css: str) -> list[str]:
    """The texts of every element `css` selects, all read from one drawing of the page."""
    from selenium.webdriver.common.by import By

    found = []
    wait_until(lambda: found.append([e.text for e in browser.find_elements(By.CSS_SELECTOR, css)]) or True,
               timeout=10, what=css)
    return found[-1]


def click_and_wait(browser, css: str, url_part: str) -> None:
    """Click the link `css` selects and wait until the page it leads to (its URL holds `url_part`) is there."""
    from selenium.webdriver.common.by import By

    browser.find_element(By.CSS_SELECTOR, css).click()
    wait_until(lambda: url_part in browser.current_url and browser.execute_script("return document.readyState") == "complete",
               timeout=20, what=f"the page at {url_part}")


def log_in(browser, live_server, username="alice", password="alice-password-1", next_path="/"):
    from selenium.webdriver.common.by import By

    browser.get(f"{live_server.url}/accounts/login/?next={next_path}")
    browser.find_element(By.NAME, "username").send_keys(username)
    browser.find_element(By.NAME, "password").send_keys(password)
    browser.find_element(By.CSS_SELECTOR, "form.stacked button[type=submit]").click()
    wait_until(lambda: "/accounts/login/" not in browser.current_url, what="the login")
