"""`tracetop view --live` typed as the README says, read without a browser: the URL it prints, the token
that guards every path, the page's own files only (no CDN), the frames it pushes as server-sent events, the
rolling window (--window) a page that connects is given, and Ctrl-C. The page itself: test_live_browser.py."""

import json
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from helpers import environment
from live_helpers import Workload

WINDOW_MS = 1000


def frames(url, wanted):
    """The messages of api/events, read until wanted(messages) holds."""
    messages = []
    with urllib.request.urlopen(url, timeout=60) as stream:
        while not wanted(messages):
            line = stream.readline()
            assert line, "the event stream ended"
            if line.startswith(b"data: "):
                messages.append(json.loads(line[6:]))
    return messages


def test_every_live_process_under_the_token_within_the_window(tmp_path):
    workload = Workload(tmp_path)
    view = subprocess.Popen(
        [sys.executable, "-m", "tracetop", "view", "--live", "--window", str(WINDOW_MS / 1000), "--no-browser"],
        cwd=tmp_path,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        url = view.stdout.readline().strip()
        found = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/([A-Za-z0-9_-]{20,})/live\.html", url)
        assert found, url
        port, token = found.groups()
        for path in ("live.html", "live.js", "api/events"):
            for wrong in ("", "A" * len(token) + "/", token[:-1] + "/"):
                with pytest.raises(urllib.error.HTTPError) as refused:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/{wrong}{path}", timeout=30)
                assert refused.value.code == 403, (wrong, path)
        page = urllib.request.urlopen(url, timeout=30).read().decode()
        assert "live.js" in page and "://" not in page  # its own files only

        # No PID named: the workload, started before, is watched; frames follow each other, ten a second.
        events = f"http://127.0.0.1:{port}/{token}/api/events"
        seen = frames(
            events,
            lambda messages: (
                len(messages) > 3
                and messages[-1]["type"] == "frame"
                and any(process["pid"] == workload.pid for process in messages[-1]["processes"])
                and messages[-1]["t"] > 3 * WINDOW_MS
            ),
        )
        assert seen[0]["type"] == "hello" and seen[0]["window_ms"] == WINDOW_MS
        times = [message["t"] for message in seen if message["type"] == "frame"]
        assert times == sorted(times)

        # A page that connects now is given the window: the calls that ended in the last second, not before
        # (on a loaded machine the last second may hold none yet: a later page is asked).
        deadline = time.monotonic() + 60
        while True:
            (hello,) = frames(events, lambda messages: messages)
            ends = [span[5] for span in hello["spans"] if span[0] == workload.pid]
            if ends or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert ends, hello
        # The window is cut at each frame (a tenth of a second), and a frame's calls come in no set order.
        assert max(ends) - min(ends) <= WINDOW_MS + 300, (min(ends), max(ends))
    finally:
        workload.stop()
        view.send_signal(signal.SIGINT)
        _, stderr = view.communicate(timeout=60)
    assert view.returncode == 0, stderr
    assert stderr == "tracetop: serving the viewer on 127.0.0.1; Ctrl-C stops it\n"


def test_sigterm_ends_the_viewers_it_started(tmp_path):
    """SIGTERM (as a service manager or `kill` sends it) ends `tracetop view --live` as Ctrl-C does: the viewer of
    a recorded part it started ends with it, not left behind; it says nothing more, and dies of the signal."""
    workload = Workload(tmp_path)
    view = subprocess.Popen(
        [sys.executable, "-m", "tracetop", "view", "--live", str(workload.pid), "--no-browser"],
        cwd=tmp_path,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = view.stdout.readline().strip().removesuffix("live.html")
        frames(base + "api/events", lambda messages: any(m.get("processes") for m in messages[1:]))
        with urllib.request.urlopen(f"{base}api/open?pid={workload.pid}", timeout=120) as answer:
            opened = json.load(answer)["url"]
        with urllib.request.urlopen(opened + "api/meta", timeout=60) as answer:
            assert answer.status == 200
        view.send_signal(signal.SIGTERM)
        _, stderr = view.communicate(timeout=60)
    finally:
        if view.poll() is None:
            view.kill()
        workload.stop()
    assert view.returncode == -signal.SIGTERM, stderr
    assert stderr == "tracetop: serving the viewer on 127.0.0.1; Ctrl-C stops it\n"
    # The viewer it started was waited for before it died: no one answers there any more.
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(opened + "api/meta", timeout=30)
