"""`tracetop view`: the server answers only who has the token, only with the viewer's files and this experiment's
data, and only on 127.0.0.1."""

import concurrent.futures
import http.client
import json
import re
import socket
import struct
import threading
import urllib.parse

import pytest
from tracetop.viewer.server import MAX_UNPROVEN, READ_TIMEOUT, ViewerServer

from helpers import PROGRAMS, tracetop
from viewer_helpers import view_server


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    where = tmp_path_factory.mktemp("served")
    assert tracetop("--output", "exp", PROGRAMS / "viewer_demo.py", "50", cwd=where).returncode == 0
    with view_server(where / "exp") as (url, process):
        parts = urllib.parse.urlsplit(url)
        yield parts.port, parts.path.strip("/"), process


def get(port, path, method="GET", host=None, body=None):
    """The raw request, as written: (status, body). http.client sends the path without normalising it."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        connection.putheader("Host", host or f"127.0.0.1:{port}")
        if body is not None:
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, response.read(), dict(response.getheaders())
    finally:
        connection.close()


def test_url_has_a_random_token(served):
    port, token, process = served
    assert re.fullmatch(r"[A-Za-z0-9_-]{32}", token)
    status, body, headers = get(port, f"/{token}/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert "default-src 'self'" in headers["Content-Security-Policy"]


def test_the_data_needs_the_token(served):
    port, token, process = served
    assert get(port, f"/{token}/api/meta")[0] == 200
    wrong = token[:-1] + ("A" if token[-1] != "A" else "B")
    for path in [
        "/",
        "/index.html",
        "/api/meta",
        f"/{wrong}/",
        f"/{wrong}/api/meta",
        f"/{token[:-1]}/api/meta",
        f"/{token}x/api/meta",
        f"/x/{token}/api/meta",
        f"/?token={token}",
        f"/{token}",
        f"/{token.upper()}/api/meta",
    ]:
        status, body, headers = get(port, path)
        assert status == 403, path
        assert b"lanes" not in body


@pytest.mark.parametrize(
    "page, modules",
    [("index.html", {"viewer.js", "state.js", "objects.js", "format.js"}), ("live.html", {"live.js", "format.js"})],
)
def test_the_pages_modules_are_javascript_under_the_token(served, page, modules):
    """A page loads its script as ES modules, each named relative to the page, so under the token: every module
    its entry reaches is served as JavaScript (a browser runs no module served as anything else), and not to who
    lacks the token. The page preloads all of them: a browser would otherwise ask for them a level of imports at
    a time."""
    port, token, process = served
    html = get(port, f"/{token}/{page}")[1].decode()
    entry = set(re.findall(r'<script type="module" src="(\w+\.js)"></script>', html))
    wanted, seen = set(entry), set()
    while wanted:
        name = wanted.pop()
        seen.add(name)
        status, body, headers = get(port, f"/{token}/{name}")
        assert status == 200 and headers["Content-Type"] == "text/javascript; charset=utf-8", name
        assert get(port, f"/{name}")[0] == 403, name
        wanted |= set(re.findall(r'^import (?:[^;"]*? from )?"\./(\w+\.js)";$', body.decode(), re.MULTILINE)) - seen
    assert modules <= seen
    assert set(re.findall(r'<link rel="modulepreload" href="(\w+\.js)">', html)) == seen - entry


@pytest.mark.parametrize(
    "path",
    [
        "../MANIFEST.md",
        "..",
        "../",
        "../../../../etc/passwd",
        "%2e%2e/MANIFEST.md",
        "%2e%2e%2fMANIFEST.md",
        "..%2fMANIFEST.md",
        "%252e%252e%252fMANIFEST.md",
        "..%5cMANIFEST.md",
        "static/../../MANIFEST.md",
        "MANIFEST.md",
        "config.txt",
        "profile.txt",
        "view.idx",
        "trace",
        "trace/",
        "server.py",
        "__init__.py",
        "../server.py",
        "/etc/passwd",
        "%2fetc%2fpasswd",
        "index.html%00.txt",
        "index.html/",
        "./index.html",
        "api/../index.html",
        "api/meta/../../MANIFEST.md",
        "api/__init__",
        "api/answer",
        "api/",
        "api/_view",
    ],
)
def test_no_way_out(served, path):
    port, token, process = served
    status, body, headers = get(port, f"/{token}/{path}")
    assert 400 <= status < 500, (path, status)
    assert b"tracetop experiment" not in body and b"root:" not in body and b"TRACETOP_" not in body


def test_only_get_and_head(served):
    port, token, process = served
    assert get(port, f"/{token}/", method="HEAD")[0] == 200
    for method in ("POST", "PUT", "DELETE", "OPTIONS", "PATCH"):
        assert get(port, f"/{token}/api/meta", method=method, body=b"x")[0] == 405, method


def test_other_hosts_are_refused(served):
    """A page that makes its own name resolve to 127.0.0.1 (DNS rebinding) sends its own Host header."""
    port, token, process = served
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1", f"127.0.0.1:{port + 1}"):
        assert get(port, f"/{token}/api/meta", host=host)[0] == 403, host
    assert get(port, f"/{token}/api/meta", host=f"localhost:{port}")[0] == 200


@pytest.mark.parametrize(
    "query",
    [
        "spans",
        "spans?t0=1&t1=0&width=10&lanes=0",
        "spans?t0=0&t1=10&width=0&lanes=0",
        "spans?t0=0&t1=10&width=99999&lanes=0",
        "spans?t0=-1&t1=10&width=5&lanes=0",
        "spans?t0=a&t1=10&width=5",
        "spans?t0=0&t1=10&width=5&lanes=0;1",
        "tree?t0=0",
        "call?lane=0&depth=0",
        "samples?t0=0&t1=1&width=1&tracks=x",
        "marks?lane=-1",
        "tree?t0=0&t1=10&lanes=any",
        "call?lane=0&depth=0&t=99999999999999999999",
        "call?lane=9223372036854775808&depth=0&t=0",
        "spans?" + "&".join(f"k{i}=1" for i in range(40)),
    ],
)
def test_bad_queries_get_400(served, query):
    port, token, process = served
    status, body, headers = get(port, f"/{token}/api/{query}")
    assert status == 400, (query, status, body)
    assert b"Traceback" not in body


def test_data_answers(served):
    port, token, process = served
    status, body, headers = get(port, f"/{token}/api/meta")
    meta = json.loads(body)
    assert [lane["name"] for lane in meta["lanes"]] == ["MainThread", "worker-0", "worker-1"]
    status, body, headers = get(
        port, f"/{token}/api/spans?t0={meta['begin_ns']}&t1={meta['end_ns'] + 1}&width=800&lanes=0,1,2"
    )
    assert status == 200 and headers["Content-Type"] == "application/octet-stream"
    assert int.from_bytes(body[:4], "little") > 0
    status, all_lanes, headers = get(
        port, f"/{token}/api/spans?t0={meta['begin_ns']}&t1={meta['end_ns'] + 1}&width=800&lanes=all"
    )
    assert all_lanes == body
    for query in ("lane=0&depth=9223372036854775807&t=0", "lane=99&depth=0&t=0", "lane=0&depth=0&t=0"):
        assert get(port, f"/{token}/api/call?{query}")[:2] == (200, b"null")  # no call there


def listening_addresses(port):
    """The local addresses listening on `port`, from the kernel's socket tables."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, local_port = local.split(":")
            if int(local_port, 16) == port and state == "0A":  # LISTEN
                found.append(address)
    return found


def test_listens_on_127_0_0_1_only(served):
    port, token, process = served
    assert listening_addresses(port) == ["0100007F"]  # 127.0.0.1, little-endian; nothing on IPv6
    other = [address for address in _own_addresses() if not address.startswith("127.")]
    for address in other:
        with pytest.raises(OSError):
            socket.create_connection((address, port), timeout=2).close()


def _own_addresses():
    try:
        return socket.gethostbyname_ex(socket.gethostname())[2]
    except OSError:
        return []


def test_bad_experiment_is_one_line(tmp_path):
    completed = tracetop("view", str(tmp_path / "missing"), "--no-browser", cwd=tmp_path)
    assert completed.returncode == 2 and completed.stdout == ""
    assert completed.stderr.startswith("tracetop: error: ") and len(completed.stderr.splitlines()) == 1


def at_end(connection):
    """Whether the other end has closed the connection (nothing left to read but its end, or a reset: it closed
    without reading what was sent)."""
    connection.setblocking(False)
    try:
        return connection.recv(1) == b""
    except ConnectionResetError:
        return True
    except BlockingIOError:
        return False


def test_held_partial_connections_do_not_hold_the_server(served):
    """1,000 connections that send part of a request line and wait: the server keeps a few of them, closes the
    oldest as more come, and a request with the token is still answered."""
    port, token, process = served
    held = []
    try:
        for _ in range(1000):
            connection = socket.create_connection(("127.0.0.1", port), timeout=60)
            connection.sendall(b"GET /")
            held.append(connection)
        status, body, headers = get(port, f"/{token}/api/meta")
        assert status == 200 and json.loads(body)["lanes"]
        # Connections are taken in the order they came: by the time the request was, every held one had been,
        # and the server had closed all but the newest MAX_UNPROVEN of them.
        assert sum(map(at_end, held)) >= len(held) - MAX_UNPROVEN
        # Without the token the request line is enough to refuse: no header is waited for.
        connection = socket.create_connection(("127.0.0.1", port), timeout=5)
        connection.sendall(b"GET /not-the-token/ HTTP/1.1\r\n")
        assert connection.recv(64).startswith(b"HTTP/1.1 403 ")
        connection.close()
    finally:
        for connection in held:
            connection.close()


def _answered(port, paths, keep_alive, all_connected):
    """Asks for `paths` in turn, on one connection (keep-alive) or one each: the statuses answered. The first
    connection is made and held until `all_connected` (a barrier) lets every client go, as a browser's
    connections made ahead of their requests."""
    statuses = []
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.connect()
    all_connected.wait()
    for path in paths:
        if connection is None:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        connection.request("GET", path, headers={} if keep_alive else {"Connection": "close"})
        response = connection.getresponse()
        response.read()
        statuses.append(response.status)
        if not keep_alive:
            connection.close()
            connection = None
    if connection is not None:
        connection.close()
    return statuses


def _raw_answered(port, paths, all_connected):
    """Asks for `paths` with a bare socket each, HTTP/1.0, read to the end: the statuses answered (the first
    connection held until `all_connected`, as in _answered)."""
    statuses = []
    connection = socket.create_connection(("127.0.0.1", port), timeout=60)
    all_connected.wait()
    for path in paths:
        connection = connection or socket.create_connection(("127.0.0.1", port), timeout=60)
        with connection:
            connection.sendall(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            answer = b""
            while chunk := connection.recv(65536):
                answer += chunk
        connection = None
        statuses.append(int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else None)
    return statuses


def test_every_request_with_the_token_is_answered_under_load(tmp_path):
    """2,000 requests from 64 clients at once, a third on keep-alive connections, a third one connection each,
    a third on bare sockets, every client connected before any asks: every one is answered 200, and the server
    says nothing of it on its terminal."""
    assert tracetop("--output", "exp", PROGRAMS / "viewer_demo.py", "20", cwd=tmp_path).returncode == 0
    with view_server(tmp_path / "exp") as (url, process):
        parts = urllib.parse.urlsplit(url)
        port, token = parts.port, parts.path.strip("/")
        meta = json.loads(get(port, f"/{token}/api/meta")[1])
        kinds = [
            f"/{token}/",
            f"/{token}/api/meta",
            f"/{token}/viewer.js",
            f"/{token}/api/spans?t0={meta['begin_ns']}&t1={meta['end_ns'] + 1}&width=800&lanes=all",
        ]
        clients, requests = 64, 2000
        each = [[kinds[(c + i) % len(kinds)] for i in range(c, requests, clients)] for c in range(clients)]
        all_connected = threading.Barrier(clients)
        with concurrent.futures.ThreadPoolExecutor(clients) as pool:
            futures = [
                pool.submit(_raw_answered, port, paths, all_connected)
                if c % 3 == 2
                else pool.submit(_answered, port, paths, c % 3 == 0, all_connected)
                for c, paths in enumerate(each)
            ]
            statuses = [status for future in futures for status in future.result()]
    assert len(statuses) == requests and set(statuses) == {200}
    said = process.stderr.read().splitlines()
    assert [line for line in said if not line.startswith(("tracetop: note: ", "tracetop: serving"))] == [], said


def test_a_request_line_without_version_is_answered_at_once(served):
    """HTTP/0.9's bare `GET /`: no header follows it, so none is waited for, with the token or without."""
    port, token, process = served
    for line, status in ((b"GET /\r\n", b"403"), (f"GET /{token}/\r\n".encode(), b"400")):
        with socket.create_connection(("127.0.0.1", port), timeout=60) as connection:
            connection.sendall(line)
            connection.settimeout(READ_TIMEOUT / 2)  # well before the server would give up on the line
            answer = b""
            while chunk := connection.recv(4096):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 " + status + b" "), (line, answer)


class _BigAnswers:
    """An API whose answer is bigger than a connection's buffers, so that its writing waits for the client."""

    def answer(self, name, query):
        return b"x" * (64 << 20), "application/octet-stream"


def test_a_client_gone_mid_answer_is_no_traceback(capfd):
    """Clients that ask for a big answer and reset the connection while it is written: the server goes on, and
    says nothing about them (a browser drops the requests of views it no longer needs)."""
    server = ViewerServer(None, None, api=_BigAnswers()).start()
    try:
        for _ in range(5):
            connection = socket.socket()
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            connection.connect(("127.0.0.1", server.port))
            connection.sendall(
                f"GET /{server.token}/api/big HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode()
            )
            assert connection.recv(16).startswith(b"HTTP/1.1 200")  # the headers are out: the body is on its way
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            connection.close()  # a reset, with most of the answer unread
        status, body, headers = get(server.port, f"/{server.token}/index.html")
        assert status == 200
    finally:
        server.close()
    assert capfd.readouterr().err == ""
