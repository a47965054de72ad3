"""speedscope's own app (the npm package's release build) loads tracetop's speedscope file in headless
Chromium with no error, and shows its threads."""
import functools
import http.server
import shutil
import threading
from pathlib import Path

import pytest

from convert_helpers import convert, measure

APP = Path(__file__).resolve().parents[2] / ".venv" / "npm" / "node_modules" / "speedscope" / "dist" / "release"
CHROMIUM = shutil.which("chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not (APP / "index.html").exists() or CHROMIUM is None,
                                reason="speedscope (npm) or chromium is missing: `make test` installs them")


@pytest.fixture
def served(tmp_path):
    """The app and a profile, served on 127.0.0.1; yields (site directory, base URL)."""
    site = tmp_path / "site"
    shutil.copytree(APP, site)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_speedscope_loads_the_profile(tmp_path, served):
    site, base = served
    experiment = measure(tmp_path)
    convert(experiment, "speedscope", "-o", site / "profile.json")
    errors = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on("console", lambda message: message.type == "error" and errors.append(message.text))
            page.goto(f"{base}/index.html#profileURL={base}/profile.json")
            page.wait_for_function("document.title.includes('convert_subject.py')", timeout=30000)
            page.get_by_text("MainThread").first.wait_for(timeout=30000)
            body = page.inner_text("body")
        finally:
            browser.close()
    assert errors == []
    assert "Something went wrong" not in body and "failed" not in body.lower()
