"""`tracetop view --live`: running programs in the browser. The viewer's server (server.py: 127.0.0.1, the token,
its routing and headers) with a live API: the channels are read in C (the extension's LiveWatch: top's decoder,
aggregation and rows), and what is new goes to the page ten times a second as server-sent events.

Memory is bounded on this side: the spans and samples of the last `window` seconds, at most MAX_SPANS and
MAX_SAMPLES, a thread that ended listed only until its last record leaves the window (a program that starts a
thread per request makes thousands), and a queue of QUEUE frames per page (a page that falls further behind is
let go; its browser connects again and starts from the window). Times go to the page in milliseconds since the
server started.
"""

import collections
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time

from tracetop import _reader, _tracetop
from tracetop.viewer.server import SECURITY_HEADERS, BadRequest, Handler, ViewerServer, _number

READ_EVERY = 0.01  # seconds between reads of the channels (a 16 MiB ring fills in no less than 0.3 s)
FRAME_EVERY = 0.1  # seconds between frames: ten a second
MIN_SPAN_NS = 200_000  # shorter calls are counted in the table, not drawn
MAX_SPANS = 300_000
MAX_SAMPLES = 100_000
QUEUE = 20
MAX_PAGES = 16
SWITCH_TIMEOUT = 2.0


class EventStream:
    """The body of api/events: the window so far, then each frame, until the page goes or the feed closes."""

    def __init__(self, feed):
        self.feed = feed

    def write_to(self, out):
        frames = self.feed.subscribe()
        if frames is None:
            return
        try:
            while not self.feed.closed:
                try:
                    message = frames.get(timeout=0.5)
                except queue.Empty:
                    out.write(b": idle\n\n")  # tells a page that went away, by failing
                    out.flush()
                    continue
                if message is None:  # fell behind: let go
                    return
                out.write(b"data: " + message + b"\n\n")
                out.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            self.feed.unsubscribe(frames)


class LiveFeed:
    """Reads the channels from a thread of its own; keeps the window; hands each frame to the pages."""

    def __init__(self, pids, window):
        self.window_ns = int(window * 1e9)
        self.watch = _reader.LiveWatch(pids or None, min_ns=MIN_SPAN_NS, ended_ns=self.window_ns)
        self.origin = time.monotonic_ns()
        self.functions = []
        self.spans = collections.deque()
        self.samples = collections.deque()
        self.experiments = {}
        self.last = None  # the last frame's processes and rows, for a page that connects
        self.pages = []
        self.lock = threading.Lock()
        self.closed = False
        self.frames = 0
        self.scope = self._scoped = (0, -1)  # asked (api/top) and applied: top's rows of (pid, stream), 0: all
        self._thread = threading.Thread(target=self._run, name="tracetop-live", daemon=True)

    def start(self):
        self._thread.start()
        return self

    def close(self):
        self.closed = True
        if self._thread.is_alive():
            self._thread.join()

    def _ms(self, ns):
        return round((ns - self.origin) / 1e6, 3)

    def _run(self):
        next_frame = time.monotonic()
        while not self.closed:
            self.watch.read()
            if time.monotonic() >= next_frame:
                self._frame()
                next_frame += FRAME_EVERY
                if next_frame < time.monotonic():
                    next_frame = time.monotonic() + FRAME_EVERY
            time.sleep(READ_EVERY)

    def _frame(self):
        scope = self.scope
        if scope != self._scoped:  # here, by the thread that uses the watch
            self.watch.scope(*scope)
            self._scoped = scope
        frame = self.watch.frame()
        ms = self._ms
        spans, samples, processes = [], [], []
        for process in frame["processes"]:
            pid = process["pid"]
            self.experiments[pid] = process["experiment"]
            spans += [
                [pid, stream, function, depth, ms(begin), ms(end)]
                for stream, function, depth, begin, end in process.pop("spans")
            ]
            samples += [[pid, stream, name, ms(t), value] for stream, name, t, value in process.pop("samples")]
            for thread in process["threads"]:
                thread["stack"] = [[function, ms(t)] for function, t in thread["stack"]]
                thread["last"] = ms(thread["last"])
            processes.append(process)
        message = {
            "type": "frame",
            "t": ms(frame["now"]),
            "fbase": len(self.functions),
            "functions": frame["functions"],
            "processes": processes,
            "scope": list(scope),
            "rows": [list(row) for row in frame["rows"]],
            "spans": spans,
            "samples": samples,
            "objects": frame["objects"] and [list(row) for row in frame["objects"]],
        }
        encoded = json.dumps(message, separators=(",", ":")).encode()
        with self.lock:
            self.functions += frame["functions"]
            self._keep(self.spans, spans, MAX_SPANS, frame["now"], end=5)
            self._keep(self.samples, samples, MAX_SAMPLES, frame["now"], end=3)
            self.last = {
                "processes": processes,
                "rows": message["rows"],
                "objects": message["objects"],
                "scope": message["scope"],
            }
            self.frames += 1
            for page in self.pages:
                try:
                    page.put_nowait(encoded)
                except queue.Full:
                    with page.mutex:
                        page.queue.clear()
                    page.put_nowait(None)

    def _keep(self, kept, new, most, now_ns, end):
        kept.extend(new)
        oldest = self._ms(now_ns - self.window_ns)
        while kept and (len(kept) > most or kept[0][end] < oldest):
            kept.popleft()

    def subscribe(self):
        """A queue of frames, the first the window so far; None when too many pages are open."""
        with self.lock:
            if len(self.pages) >= MAX_PAGES:
                return None
            page = queue.Queue(maxsize=QUEUE)
            hello = {
                "type": "hello",
                "window_ms": self.window_ns / 1e6,
                "functions": self.functions,
                "spans": list(self.spans),
                "samples": list(self.samples),
                **(self.last or {}),
            }
            page.put_nowait(json.dumps(hello, separators=(",", ":")).encode())
            self.pages.append(page)
            return page

    def unsubscribe(self, page):
        with self.lock:
            if page in self.pages:
                self.pages.remove(page)


class LiveAPI:
    """The answers of /TOKEN/api/NAME?... for the live page."""

    def __init__(self, feed):
        self.feed = feed
        self.viewers = {}  # experiment -> (the `tracetop view` serving its recorded part, its URL, its stderr)
        self.lock = threading.Lock()

    def answer(self, name, query):
        method = getattr(self, f"api_{name}", None)
        if method is None:
            return None
        return method(query)

    def api_events(self, query):
        return EventStream(self.feed), "text/event-stream"

    def api_switch(self, query):
        """Measurement on or off in one process, by the request `tracetop ctl` makes."""
        pid, on = _number(query, "pid"), _number(query, "on")
        if on not in (0, 1) or pid not in self.feed.experiments:
            raise BadRequest("switch needs the pid of a watched process and on=0 or on=1")
        try:
            measuring = _reader.live_control(pid, bool(on), timeout=SWITCH_TIMEOUT)
        except _tracetop.TraceError as problem:
            return json.dumps({"error": str(problem)}).encode(), "application/json"
        return json.dumps({"pid": pid, "measuring": measuring}).encode(), "application/json"

    def api_top(self, query):
        """Which threads top's table sums, for every page, from the next frame on: pid=0 every process; else
        the threads of process pid, or its thread stream=N."""
        pid, stream = _number(query, "pid"), query.get("stream")
        self.feed.scope = (pid, _number(query, "stream") if pid and stream is not None else -1)
        return json.dumps({"scope": list(self.feed.scope)}).encode(), "application/json"

    def api_open(self, query):
        """The URL of the normal viewer on what the process recorded so far (a `tracetop view` of its own)."""
        pid = _number(query, "pid")
        experiment = self.feed.experiments.get(pid)
        if not experiment:
            raise BadRequest("open needs the pid of a watched process")
        if not os.path.isdir(experiment):
            return json.dumps({"error": f"{experiment} is not there (any more)"}).encode(), "application/json"
        with self.lock:
            viewer = self.viewers.get(experiment)
            if viewer is None or viewer[0].poll() is not None:
                if viewer is not None:
                    _end(viewer)
                # From the experiment's directory: a `tracetop` directory where this server runs is not the package.
                # Its stderr into a file: read if it fails to start; a pipe no one reads would stop it once full.
                errors = tempfile.TemporaryFile("w+")
                process = subprocess.Popen(
                    [sys.executable, "-m", "tracetop", "view", experiment, "--no-browser"],
                    cwd=experiment,
                    stdout=subprocess.PIPE,
                    stderr=errors,
                    text=True,
                )
                url = process.stdout.readline().strip()
                if not url.startswith("http://127.0.0.1:"):
                    process.kill()
                    process.wait()
                    errors.seek(0)
                    problem = errors.read().strip().splitlines()
                    _end((process, url, errors))
                    return json.dumps(
                        {"error": problem[-1] if problem else "the viewer did not start"}
                    ).encode(), "application/json"
                viewer = self.viewers[experiment] = (process, url, errors)
        return json.dumps({"url": viewer[1]}).encode(), "application/json"

    def close(self):
        with self.lock:
            for viewer in self.viewers.values():
                _end(viewer)


def _end(viewer):
    """Ends a `tracetop view` of a recorded part (if it still runs) and closes what it wrote into."""
    process, _, errors = viewer
    process.terminate()
    process.wait()
    process.stdout.close()
    errors.close()


class LiveHandler(Handler):
    """server.py's handler; an EventStream body goes out as it comes, on a connection of its own."""

    def _send(self, status, body, content_type, head=False, extra=None):
        if not isinstance(body, EventStream):
            return super()._send(status, body, content_type, head=head, extra=extra)
        self.close_connection = True
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Connection", "close")
        for name, value in {**SECURITY_HEADERS, **(extra or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        if not head:
            body.write_to(self.wfile)


class LiveServer(ViewerServer):
    """The live page of processes `pids` (every live process of the user when empty), on 127.0.0.1 under a
    random token."""

    def __init__(self, pids, window=60.0, port=0):
        self.feed = LiveFeed(pids, window)
        self.live_api = LiveAPI(self.feed)
        super().__init__(None, None, port=port, api=self.live_api)
        self.httpd.RequestHandlerClass = LiveHandler
        self.url += "live.html"
        self.feed.start()

    def close(self):
        self.feed.close()
        super().close()
        self.live_api.close()
