"""A real headless Chromium for the web tests (chromedriver and selenium), shared by the browser test modules.

Chromium, chromedriver or selenium missing: skipped with the reason, except under CI=true, where it fails
(CI installs them; a silent skip there would hide a broken browser test).  Every wait is bounded: the
page-load and script timeouts of the driver, and the test's own timeout.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any, NoReturn

import pytest


def _missing(reason: str) -> NoReturn:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}: the browser test cannot run")
    pytest.skip(reason)


@pytest.fixture(scope="module", name="driver")
def chromium_driver() -> Iterator[Any]:
    """The browser (the fixture ``driver``: a test module imports this function to use it)."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _missing("the selenium package is not installed (pip install selenium)")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    chromedriver = shutil.which("chromedriver")
    if not chromium or not chromedriver:
        _missing("chromium or chromedriver is not installed (apt-get install chromium chromium-driver)")
    profile = tempfile.mkdtemp(prefix="web-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--window-size=1280,900",
        "--lang=en-US",
    ):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # The driver's path is given, so Selenium Manager never looks for one online; and no usage reports.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SE_AVOID_STATS", "true")
        drv = webdriver.Chrome(service=Service(executable_path=chromedriver, log_output=os.devnull), options=opts)
    try:
        drv.set_page_load_timeout(30)
        drv.set_script_timeout(10)
        yield drv
    finally:
        drv.quit()
        shutil.rmtree(profile, ignore_errors=True)


def no_errors(driver: Any) -> None:
    severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, f"browser errors: {severe}"
