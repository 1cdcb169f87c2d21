import sys
from pathlib import Path

import pytest

# The jobs fixtures live one folder up (tests/jobs_fixtures.py).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from browsing import OFFLINE_FLAGS, chromium  # noqa: E402


@pytest.fixture
def browser(tmp_path):
    driver = chromium(tmp_path / "downloads")
    yield driver
    driver.quit()


@pytest.fixture
def offline_browser(tmp_path):
    driver = chromium(tmp_path / "downloads", OFFLINE_FLAGS)
    yield driver
    driver.quit()
