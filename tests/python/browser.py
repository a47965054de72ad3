"""Browser tests' plumbing: Debian's Chromium driven by Playwright (never `playwright install`; conftest.py's
`browser` fixture launches it), pages with their console errors collected, screenshots kept in tests/artifacts/
to look at, and probes of what a page draws."""

import contextlib
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
ARGUMENTS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


@contextlib.contextmanager
def page_of(browser, url=None, bypass_csp=True, offline=False, size=(1400, 900)):
    """A fresh page (its own context) with console errors collected in page.errors. bypass_csp lets the tests'
    probes (which Playwright evaluates as strings) run under the viewer's Content-Security-Policy."""
    context = browser.new_context(
        bypass_csp=bypass_csp, viewport={"width": size[0], "height": size[1]}, offline=offline
    )
    context.set_default_timeout(60_000)  # a page waits on what it shows, however loaded the machine
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


# Records every text drawn on a canvas in window.drawnLabels (added to a page before its scripts run).
RECORD_LABELS = """window.drawnLabels = [];
const fillText = CanvasRenderingContext2D.prototype.fillText;
CanvasRenderingContext2D.prototype.fillText = function (text, ...rest) {
  window.drawnLabels.push(String(text));
  return fillText.call(this, text, ...rest);
};"""

# programs/long_names.py's qualified name, too long for any box.
LONG_NAME = "NumericalIntegrationWorkspace.AdaptiveQuadratureRefinement.integrate_subinterval_recursively"


def shortened_labels(page):
    """The labels drawn for the long name: cut in the middle, both its ends kept."""
    labels = page.evaluate("window.drawnLabels")
    return [label for label in labels if "…" in label and label.startswith("Num") and label.endswith("ively")]


def TTmiddle(text, keep):  # noqa: N802 -- names.js's middle(), to check the table's text against
    head = (keep - 1 + 1) // 2
    return text if len(text) <= keep else text[:head] + "…" + text[len(text) - (keep - 1 - head) :]
