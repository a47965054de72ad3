"""The viewer's MPI communication data: /TOKEN/api/comm_*, answered as JSON from the C communication view
(`_reader.MpiView`, src/analysis/mpi_view.h), built on the first request: a trace without MPI ranks costs its
definitions only, one with ranks a read of their streams."""

import json
import threading

from tracetop import _reader, _tracetop
from tracetop.viewer.server import BadRequest, _number

# The most of each kind one answer holds: lines and collectives spread over the range beyond (the C view
# picks them evenly), a pair's messages a page at a time.
LINES, COLLECTIVES, PAGE = 3000, 1000, 200
WHOLE_RUN = (0, 1 << 63)


class CommAPI:
    def __init__(self, experiment):
        self.experiment = experiment
        self._view, self._lock = None, threading.Lock()

    @property
    def view(self):
        with self._lock:
            if self._view is None:
                try:
                    self._view = _reader.MpiView(self.experiment)
                except _tracetop.TraceError as problem:
                    raise BadRequest(f"cannot read the MPI communication: {problem}") from None
            return self._view

    def _range(self, query):
        if "t0" not in query and "t1" not in query:
            return WHOLE_RUN
        t0, t1 = _number(query, "t0"), _number(query, "t1")
        if t1 <= t0:
            raise BadRequest("a range needs t0 < t1")
        return t0, t1

    @staticmethod
    def _json(value):
        return json.dumps(value, separators=(",", ":")).encode(), "application/json"

    def api_comm_meta(self, query):
        view = self.view
        return self._json(
            {"world_size": view.world_size, "ranks": view.ranks, "communicators": view.communicators, **view.counts}
        )

    def api_comm_lines(self, query):
        total, rows = self.view.lines(*self._range(query), LINES)
        return self._json({"total": total, "rows": rows})

    def api_comm_collectives(self, query):
        total, rows = self.view.collectives(*self._range(query), COLLECTIVES)
        return self._json({"total": total, "rows": rows})

    def api_comm_matrix(self, query):
        t0, t1 = self._range(query)
        return self._json({"pairs": self.view.matrix(t0, t1), "communicators": self.view.comm_stats(t0, t1)})

    def api_comm_pair(self, query):
        sender, receiver = _number(query, "sender"), _number(query, "receiver")
        if max(sender, receiver) >= 1 << 32:
            raise BadRequest("sender and receiver are ranks below 2**32")
        total, rows = self.view.pair(sender, receiver, *self._range(query), _number(query, "skip", 0), PAGE)
        return self._json({"total": total, "rows": rows})
