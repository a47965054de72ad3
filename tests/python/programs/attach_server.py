"""A plain HTTP server on 127.0.0.1, started without tracetop, for `tracetop attach` tests. It prints its
port; GET /work?n=N computes and answers, GET /hooks says whether a profile hook is set anywhere: this
thread's and the one threading's bootstrap hands new threads (its global, which tracetop's hook for them is
in, though threading.getprofile() answers what the program set), then the names of the sys.monitoring tools
in use (3.12+), none when none is."""

import http.server
import sys
import threading


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def compute(n):
    return sum(fib(k) for k in range(n))


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/work"):
            body = str(compute(int(self.path.partition("n=")[2] or 15))).encode()
        else:
            monitoring = getattr(sys, "monitoring", None)
            tools = [monitoring.get_tool(tool) for tool in range(6)] if monitoring else []
            body = repr((sys.getprofile(), threading._profile_hook, *filter(None, tools))).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
