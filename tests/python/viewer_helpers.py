"""What the viewer's tests share: a `tracetop view` server running on an experiment, and experiments to view."""

import contextlib
import signal
import subprocess
import sys

from helpers import environment


@contextlib.contextmanager
def view_server(experiment, *options):
    """Runs `tracetop view EXPERIMENT --no-browser` (a Path) beside it, where no source tree shadows the
    installed tracetop; yields (url, process) once it serves."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tracetop", "view", str(experiment), "--no-browser", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(),
        cwd=experiment.parent,
    )
    try:
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), process.stderr.read() if process.poll() is not None else url
        yield url, process
        # The server serves until it is stopped: one that ended on its own is a failure of the test, whatever it
        # answered.
        assert process.poll() is None, f"the server ended by itself ({process.returncode}): {process.stderr.read()}"
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
