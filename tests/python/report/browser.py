"""A real headless Chromium (Debian's `chromium` and `chromedriver`, installed by `make sysdeps`)
driven through Selenium, for the report's tests. :func:`open_report` loads a file:// page and
returns the driver with the page's console messages collected."""

from __future__ import annotations

import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


def require_chromium() -> None:
    """Skip (with why) when the browser, its driver or Selenium is missing."""
    missing = [n for n, p in (("chromium", CHROMIUM), ("chromedriver", CHROMEDRIVER)) if p is None]
    if missing:
        pytest.skip(f"headless browser tests need {' and '.join(missing)} (Debian packages chromium and "
                    "chromium-driver: `make sysdeps` as root installs them)")
    pytest.importorskip("selenium", reason="selenium is missing from the venv (make venv installs PY_DEPS)")


def built_page(tmp_path_factory, name: str, results: Path, study: Path | None = None) -> Path:
    """The report of ``results`` (with ``study``) as ``<name>.html`` for the browser: skipped
    like :func:`require_chromium`."""
    from hsrtcp.report.build import build_report

    require_chromium()
    out = tmp_path_factory.mktemp("html") / f"{name}.html"
    build_report(results, study, out)
    return out


@contextmanager
def browser(width: int = 1400, height: int = 1000):
    require_chromium()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}", "--force-device-scale-factor=1"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        yield driver
    finally:
        driver.quit()


def load(driver, path: Path, timeout: float = 20.0) -> list[dict]:
    """Open ``path``, wait until the report's script has finished; return the console log."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(Path(path).resolve().as_uri())
    WebDriverWait(driver, timeout).until(
        lambda d: d.execute_script("return document.readyState") == "complete")
    try:
        WebDriverWait(driver, timeout).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
    except Exception:  # the console log says why; the caller asserts on it
        pass
    return driver.get_log("browser")
