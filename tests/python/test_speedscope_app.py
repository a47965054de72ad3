"""speedscope's own app (the npm package's release build) loads tracetop's speedscope file in headless
Chromium with no error, and shows its threads."""

import functools
import http.server
import shutil
import sys
import threading
from pathlib import Path

import pytest

from browser import page_of
from convert_helpers import convert, measure

# Installed by the Makefile into the virtual environment that runs the tests (.venv, .venv-3.12, ...).
APP = Path(sys.prefix) / "npm" / "node_modules" / "speedscope" / "dist" / "release"

pytestmark = pytest.mark.skipif(
    not (APP / "index.html").exists(), reason=f"speedscope (npm) is not in {APP}: `make test` installs it"
)


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


def test_speedscope_loads_the_profile(browser, tmp_path, served):
    site, base = served
    experiment = measure(tmp_path)
    convert(experiment, "speedscope", "-o", site / "profile.json")
    with page_of(browser, bypass_csp=False) as page:
        page.goto(f"{base}/index.html#profileURL={base}/profile.json")
        page.wait_for_function("document.title.includes('convert_subject.py')")
        page.get_by_text("MainThread").first.wait_for()
        body = page.inner_text("body")
        errors = page.errors
    assert errors == []
    assert "Something went wrong" not in body and "failed" not in body.lower()
