"""Opening an experiment for the viewer and the report: its level-of-detail index, with what to tell the user."""

import time

from tracetop import _reader, messages
from tracetop.latest import tell_problems

# A build that takes longer than this many seconds says how it goes on stderr, a line a second.
PROGRESS_AFTER = 1.0


def open_index(experiment):
    """The experiment's index (built and cached on first use); says on stderr what the user should know."""
    started = time.monotonic()
    index = _reader.Index(experiment, progress=PROGRESS_AFTER)
    if index.built:
        messages.note(
            f"indexed {experiment} in {time.monotonic() - started:.1f} s"
            + (f" (not cached: {index.cache_problem})" if index.cache_problem else "")
        )
    tell_problems(experiment, index.problems, corrupt=False)
    return index
