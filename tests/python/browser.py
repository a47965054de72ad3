"""Browser tests' plumbing: Debian's Chromium driven by Playwright (never `playwright install`), the viewer served
in-process, screenshots kept in tests/artifacts/ to look at."""
import contextlib
import os
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGUMENTS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--no-first-run"]
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


# Per module: each test module imports this fixture, and two Playwright instances cannot run at once.
@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is not installed (make test installs it)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGUMENTS)
        yield chromium
        chromium.close()


@contextlib.contextmanager
def page_of(browser, url=None, bypass_csp=True, offline=False, size=(1400, 900)):
    """A fresh page (its own context) with console errors collected in page.errors. bypass_csp lets the tests'
    probes (which Playwright evaluates as strings) run under the viewer's Content-Security-Policy."""
    context = browser.new_context(bypass_csp=bypass_csp, viewport={"width": size[0], "height": size[1]},
                                  offline=offline)
    page = context.new_page()
    page.errors = []
    page.on("console", lambda message: message.type == "error" and page.errors.append(message.text))
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    try:
        if url:
            page.goto(url)
        yield page
    finally:
        context.close()


def screenshot(page, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path
