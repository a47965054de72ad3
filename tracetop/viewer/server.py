"""The viewer's local server: static files and the data of one experiment, answered by the C index.

Everything is under one path prefix, a random token (`http://127.0.0.1:PORT/TOKEN/`), so only who was given
the URL can read the experiment. The server routes by exact names: it serves the files of static/ known when
it started and the data API, and never turns a request into a file path, so nothing outside can be reached.
"""

import collections
import hmac
import http.server
import io
import json
import os
import re
import secrets
import selectors
import sys
import threading
import time
import urllib.parse
from pathlib import Path

from tracetop import _reader, messages
from tracetop.latest import running

STATIC = Path(__file__).parent / "static"
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
# The browser may load what the viewer itself serves, and nothing else.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


# Connections that have not yet shown the token on their request line wait in a lobby that the server's own
# thread reads, without a thread each: at most this many, the oldest closed to make room and any closed after
# READ_TIMEOUT s, so that who lacks the token cannot hold the server. A connection that shows it gets a thread.
MAX_UNPROVEN = 256
READ_TIMEOUT = 10
# The token is in the first bytes of a request line: this many, without its end, are enough to decide.
REQUEST_LINE_SEEN = 1024
FORBIDDEN = b"forbidden\n"


def _refusal(status, body):
    """A whole answer that closes the connection, written before any header of the request is read."""
    return (
        b"HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
        % (status, len(body), body)
    )


class BadRequest(Exception):
    """A data request with missing or malformed parameters: 400 with this message."""


def static_files():
    """name -> (bytes, content type) for the viewer's files, read once."""
    files = {}
    for path in sorted(STATIC.iterdir()):
        if path.is_file() and path.suffix in CONTENT_TYPES:
            files[path.name] = (path.read_bytes(), CONTENT_TYPES[path.suffix])
    return files


def _number(query, name, default=None):
    text = query.get(name, default)
    if text is None:
        raise BadRequest(f"missing parameter {name}")
    if not re.fullmatch(r"\d{1,20}", str(text)) or int(text) >= 1 << 63:
        raise BadRequest(f"parameter {name} must be a whole number below 2**63")
    return int(text)


def _numbers(query, name):
    text = query.get(name, "")
    if not re.fullmatch(r"(\d{1,10}(,\d{1,10})*)?", text):
        raise BadRequest(f"parameter {name} must be whole numbers separated by commas")
    return [int(part) for part in text.split(",") if part]


def _activity(experiment, lanes):
    """Per lane, its thread's usage records as the trace has them: [[time, cpu_ns, samples, gil_samples], ...]
    (the activity band: running with the GIL, running without it, off the CPU)."""
    usage = {}
    for process in _reader.Trace(experiment).processes:
        for thread in process["threads"]:
            usage.setdefault((process["pid"], thread["stream"], thread["native_tid"]), thread["usage"])
    return [usage.get((lane["pid"], lane["stream"], lane["native_tid"]), []) for lane in lanes]


class DataAPI:
    """The answers of /TOKEN/api/NAME?..., each from the index: (bytes, content type)."""

    def __init__(self, experiment, index):
        from tracetop.viewer.comm import CommAPI  # it imports this module

        self.index = index
        self.comm = CommAPI(experiment)
        self.experiment = experiment
        self.task_lanes = None  # TaskLanes, made at the first question about tasks
        self.told_read_problem = False
        self.activity = json.dumps(_activity(experiment, index.lanes)).encode()
        # The objects tracks come after every other (lod.h): the counters' and parameters' indices stay theirs.
        tracks = [track for track in index.tracks if track["kind"] != "objects"]
        objects = [dict(track, track=i) for i, track in enumerate(index.tracks) if track["kind"] == "objects"]
        self.meta = json.dumps(
            {
                "experiment": os.path.basename(os.path.abspath(experiment)),
                "begin_ns": index.begin_ns,
                "end_ns": index.end_ns,
                "levels": index.levels,
                "lanes": index.lanes,
                "regions": index.regions,
                "tracks": tracks,
                "objects": objects,
                "problems": index.problems,
                "running": running(experiment),
            }
        ).encode()

    def answer(self, name, query):
        method = getattr(self, f"api_{name}", None) or getattr(self.comm, f"api_{name}", None)
        if method is None:
            return None
        answer = method(query)
        if self.index.read_problem and not self.told_read_problem:  # the calls of a view are read from the trace
            self.told_read_problem = True
            messages.warning(f"{self.index.read_problem}; the view lacks those calls (open it again to index it anew)")
        return answer

    def api_meta(self, query):
        return self.meta, "application/json"

    def api_activity(self, query):
        return self.activity, "application/json"

    def _lanes(self, query):
        """The lanes asked for: numbers separated by commas, or `all`."""
        if query.get("lanes") == "all":
            return list(range(len(self.index.lanes)))
        return _numbers(query, "lanes")

    def _view(self, query):
        t0, t1, width = _number(query, "t0"), _number(query, "t1"), _number(query, "width")
        if t1 <= t0 or not 0 < width <= 65536:
            raise BadRequest("a view needs t0 < t1 and a width of 1 to 65536 pixels")
        return t0, t1, width

    def api_spans(self, query):
        only = _numbers(query, "only") if "only" in query else None
        data = self.index.spans(*self._view(query), self._lanes(query), only=only, limit=500_000)
        return data, "application/octet-stream"

    def api_samples(self, query):
        return self.index.samples(*self._view(query), _numbers(query, "tracks")), "application/octet-stream"

    def api_tree(self, query):
        t0, t1 = _number(query, "t0"), _number(query, "t1")
        return self.index.tree(t0, t1, self._lanes(query)), "application/octet-stream"

    def api_objects(self, query):
        t0, t1 = _number(query, "t0"), _number(query, "t1")
        return self.index.objects(t0, t1, self._lanes(query)), "application/octet-stream"

    def api_tree_objects(self, query):
        t0, t1 = _number(query, "t0"), _number(query, "t1")
        return self.index.tree_objects(
            t0, t1, self._lanes(query), query.get("type") or None
        ), "application/octet-stream"

    def api_call(self, query):
        call = self.index.call_at(_number(query, "lane"), _number(query, "depth"), _number(query, "t"))
        return json.dumps(call).encode(), "application/json"

    def api_marks(self, query):
        return json.dumps(self.index.marks(_number(query, "lane"))).encode(), "application/json"

    def _tasks(self):
        if self.task_lanes is None:
            self.task_lanes = _reader.TaskLanes(self.experiment)
        return self.task_lanes

    def api_tasks(self, query):
        """The asyncio tasks as lanes (tasks.js), and the await time per coroutine."""
        tasks = self._tasks()
        return json.dumps({"lanes": tasks.lanes, "awaits": tasks.awaits}).encode(), "application/json"

    def api_task_steps(self, query):
        """Per task, its steps in the view as [begin, end, ...], those under a pixel apart joined."""
        t0, t1, width = self._view(query)
        gap = (t1 - t0) // width
        return json.dumps(self._tasks().window(t0, t1, gap, 20000)).encode(), "application/json"


class Handler(http.server.BaseHTTPRequestHandler):
    server_version = "tracetop"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    # Headers and body go out as two writes: without this, the client's delayed ACK holds the second back
    # for some 40 ms (Nagle's algorithm), which would be most of the time of a query.
    disable_nagle_algorithm = True

    timeout = READ_TIMEOUT  # on every read: a client that stops sending is let go

    def setup(self):
        super().setup()
        received = self.server.received(self.connection)
        if received:  # what the lobby read of the first request comes first
            self.rfile = io.BufferedReader(_Prefixed(received, self.connection))

    def parse_request(self):
        """The token first, from the request line alone: the headers of who lacks it are not read. A request line
        without an HTTP version (HTTP/0.9) is refused: no browser sends one, and it has no headers to wait for."""
        words = self.raw_requestline.split()
        if len(words) < 2 or not self.server.viewer.has_token(words[1].decode("latin-1")):
            self.close_connection = True
            self.wfile.write(_refusal(b"403 Forbidden", FORBIDDEN))
            return False
        if len(words) != 3:
            self.close_connection = True
            self.wfile.write(_refusal(b"400 Bad Request", b"a request line needs an HTTP version\n"))
            return False
        return super().parse_request()

    def do_GET(self):
        self._respond(head=False)

    def do_HEAD(self):
        self._respond(head=True)

    def _refuse_method(self):
        self._send(405, b"method not allowed\n", "text/plain; charset=utf-8", extra={"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = _refuse_method

    def log_message(self, format, *args):  # the terminal is the user's: requests are not news
        pass

    def _respond(self, head):
        try:
            status, body, content_type = self.server.viewer.route(self.path, self.headers.get("Host", ""))
        except Exception as failure:  # tracetop's own fault: said in one line, and the server goes on
            messages.internal_error(failure)
            status, body, content_type = 500, b"internal error\n", "text/plain; charset=utf-8"
        self._send(status, body, content_type, head=head)

    def _send(self, status, body, content_type, head=False, extra=None):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in {**SECURITY_HEADERS, **(extra or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)


class _Prefixed(io.RawIOBase):
    """A connection read from the bytes already received from it, then from the socket."""

    def __init__(self, received, connection):
        self._received = received
        self._connection = connection

    def readable(self):
        return True

    def readinto(self, buffer):
        if self._received:
            n = min(len(buffer), len(self._received))
            buffer[:n] = self._received[:n]
            self._received = self._received[n:]
            return n
        return self._connection.recv_into(buffer)


class _Waiting:
    """A connection in the lobby: what it has sent so far, and since when."""

    __slots__ = ("connection", "address", "received", "since")

    def __init__(self, connection, address):
        self.connection = connection
        self.address = address
        self.received = b""
        self.since = time.monotonic()


class _HTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a keep-alive connection's thread waits READ_TIMEOUT s for a request: not for it
    allow_reuse_address = False
    request_queue_size = 128

    def __init__(self, *arguments):
        super().__init__(*arguments)
        self.socket.setblocking(False)
        self._waiting = collections.OrderedDict()  # connection -> _Waiting, oldest first; the serving thread's
        self._received = {}  # connection -> what the lobby read of it, until its thread takes it
        self._received_lock = threading.Lock()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.socket, selectors.EVENT_READ)
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._stopped.set()

    def serve_forever(self, poll_interval=0.5):
        """Accepts connections and reads the lobby's, until shutdown()."""
        self._stopped.clear()
        try:
            while not self._stop.is_set():
                for key, _ in self._selector.select(poll_interval):
                    if key.data is None:
                        self._accept()
                    else:
                        self._read(key.data)
                self._expire()
        finally:
            self._stopped.set()

    def shutdown(self):
        self._stop.set()
        self._stopped.wait()

    def server_close(self):
        for waiting in list(self._waiting.values()):
            self._leave(waiting)
        self._selector.close()
        super().server_close()

    def handle_error(self, request, client_address):
        """A connection's failure, said in one line; not a browser that goes away before its answer is written (it
        no longer needs the view), which is none of the user's business."""
        failure = sys.exc_info()[1]
        if not isinstance(failure, (ConnectionError, TimeoutError)):
            messages.internal_error(failure)

    def received(self, connection):
        """What the lobby read of `connection` before its thread took it (the start of its first request)."""
        with self._received_lock:
            return self._received.pop(connection, b"")

    def _accept(self):
        while True:
            try:
                connection, address = self.socket.accept()
            except BlockingIOError:
                return
            except OSError as problem:  # out of file descriptors, say: the lobby's oldest make room
                if not self._waiting:
                    messages.warning(f"viewer: cannot accept a connection: {problem.strerror or problem}")
                    self._stop.wait(0.5)
                    return
                self._leave(next(iter(self._waiting.values())))
                continue
            connection.setblocking(False)
            waiting = _Waiting(connection, address)
            self._waiting[connection] = waiting
            self._selector.register(connection, selectors.EVENT_READ, waiting)
            if len(self._waiting) > MAX_UNPROVEN:
                self._leave(next(iter(self._waiting.values())))

    def _read(self, waiting):
        try:
            data = waiting.connection.recv(REQUEST_LINE_SEEN)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._leave(waiting)
            return
        waiting.received += data
        end = waiting.received.find(b"\n")
        if end < 0 and len(waiting.received) < REQUEST_LINE_SEEN:
            return
        words = waiting.received[: end if end >= 0 else REQUEST_LINE_SEEN].split()
        if len(words) >= 2 and self.viewer.has_token(words[1].decode("latin-1")):
            self._selector.unregister(waiting.connection)
            del self._waiting[waiting.connection]
            waiting.connection.setblocking(True)
            with self._received_lock:
                self._received[waiting.connection] = waiting.received
            self.process_request(waiting.connection, waiting.address)
            return
        try:  # a few bytes into an empty buffer: written at once, or the connection is gone anyway
            waiting.connection.send(_refusal(b"403 Forbidden", FORBIDDEN))
        except OSError:
            pass
        self._leave(waiting)

    def _expire(self):
        """Closes the lobby's connections that have waited READ_TIMEOUT s for the end of a request line."""
        oldest = time.monotonic() - READ_TIMEOUT
        while self._waiting:
            waiting = next(iter(self._waiting.values()))
            if waiting.since > oldest:
                return
            self._leave(waiting)

    def _leave(self, waiting):
        self._selector.unregister(waiting.connection)
        del self._waiting[waiting.connection]
        waiting.connection.close()


class ViewerServer:
    """Serves one experiment on 127.0.0.1 at a random port (or `port`) under a random token; or, given `api`,
    that API (an object with answer(name, query), as DataAPI) in place of an experiment's."""

    def __init__(self, experiment, index, port=0, api=None):
        self.token = secrets.token_urlsafe(24)
        self.files = static_files()
        self.api = api if api is not None else DataAPI(experiment, index)
        self.httpd = _HTTPServer(("127.0.0.1", port), Handler)
        self.httpd.viewer = self
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/{self.token}/"
        self._thread = None

    def route(self, raw_path, host):
        """(status, body, content type) for a GET of raw_path."""
        # A page of another site that makes its name resolve to 127.0.0.1 sends its own Host: refused.
        if host not in (f"127.0.0.1:{self.port}", f"localhost:{self.port}"):
            return 403, b"forbidden\n", "text/plain; charset=utf-8"
        if not self.has_token(raw_path):
            return 403, FORBIDDEN, "text/plain; charset=utf-8"
        path, _, query_text = raw_path.partition("?")
        parts = path.split("/")
        rest = "/".join(parts[2:])
        if rest == "":
            rest = "index.html"
        if rest in self.files:
            body, content_type = self.files[rest]
            return 200, body, content_type
        if rest.startswith("api/"):
            try:
                query = dict(urllib.parse.parse_qsl(query_text, keep_blank_values=True, max_num_fields=16))
                answer = self.api.answer(rest[4:], query)
            except (BadRequest, ValueError, OverflowError) as problem:
                return 400, f"{problem}\n".encode(), "text/plain; charset=utf-8"
            if answer is not None:
                return 200, *answer
        return 404, b"not found\n", "text/plain; charset=utf-8"

    def has_token(self, raw_path):
        """Whether the path of a request starts with /TOKEN/."""
        parts = raw_path.partition("?")[0].split("/")
        return len(parts) >= 3 and parts[0] == "" and hmac.compare_digest(parts[1].encode(), self.token.encode())

    def serve_forever(self):
        self.httpd.serve_forever(poll_interval=0.2)

    def start(self):
        """Serves from a thread of its own (for tests and the bench)."""
        self._thread = threading.Thread(target=self.serve_forever, name="tracetop-viewer", daemon=True)
        self._thread.start()
        return self

    def close(self):
        if self._thread:
            self.httpd.shutdown()
        self.httpd.server_close()
