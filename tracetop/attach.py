"""The half of `tracetop attach` that runs inside the process attached to (the attaching command is
tracetop/commands/attach.py). The process runs the bootstrap BOOTSTRAP in a thread of its own, which
imports this module and calls measure(): the measurement starts, the thread waits for its end (duration,
detach, the attaching command gone), stops it and leaves. Nothing here prints: the process's stderr is
the program's, so what tracetop has to say goes to the status file the attaching command reads.
"""

import sys
import time

from tracetop import _tracetop, messages
from tracetop.options import from_keywords
from tracetop.session import Session

# Run by the process in a thread of its own; {constants} are filled in by the attaching command. It
# imports tracetop from the directory of this build, whatever the program's sys.path, and only after
# checking that the process's Python is the one the build is for; it leaves sys.path as it was.
BOOTSTRAP = """\
import sys
{constants}
def _report(**what):
    import json, os
    try:
        with open(STATUS + '.tmp', 'w') as out:
            json.dump(what, out)
        os.replace(STATUS + '.tmp', STATUS)
    except OSError:  # the attaching command has gone, and its directory with it
        pass
def _claimed():  # only the first run goes on: the pending call and the call at a GIL release may both come
    import os
    try:
        os.unlink(CLAIM)
        return True
    except OSError:
        return False
try:
    import importlib.machinery
    loaded = sys.modules.get('tracetop')
    if not _claimed():
        pass
    elif importlib.machinery.EXTENSION_SUFFIXES[0] != EXTENSION_SUFFIX:
        _report(state='refused', message='its Python (%s, extension modules %s) is not the one this tracetop is '
                'built for (%s): attach with the tracetop installed for that Python'
                % (sys.version.split()[0], importlib.machinery.EXTENSION_SUFFIXES[0], EXTENSION_SUFFIX))
    elif loaded is not None and not (getattr(loaded, '__file__', None) or '').startswith(PACKAGE + '/'):
        _report(state='refused', message='it has imported another tracetop (%s)' % getattr(loaded, '__file__', '?'))
    else:
        sys.path.insert(0, SEARCH_PATH)
        try:
            import tracetop.attach
        finally:
            sys.path.remove(SEARCH_PATH)
        tracetop.attach.measure(_report, ATTACHER, DURATION, OPTIONS, COMMAND)
except BaseException as failure:
    _report(state='failed', message='%s: %s' % (type(failure).__name__, failure))
"""


def measure(report, attacher, duration, options, command):
    """Measures this process into the experiment options["output"] until `duration` seconds (0: no limit)
    have passed, detach is asked or process `attacher` has ended; says how it goes through report(**what)."""
    began = time.time()
    _tracetop.attach_own_thread()
    kept = messages.kept = []
    try:
        session = _AttachedSession.begin(from_keywords(options, {}), program=_program(), command=command)
    except Exception as failure:
        messages.kept = None
        report(
            state="refused" if isinstance(failure, _tracetop.TraceError) else "failed",
            message=str(failure),
            messages=kept,
        )
        return
    report(state="attached", began=began, at=time.time(), messages=kept)
    reason = _tracetop.attach_wait(attacher, duration)
    try:
        stats = session.stop()
    finally:
        messages.kept = None
    report(state="detached", reason=reason, stats=stats, messages=kept)


class _AttachedSession(Session):
    attached = True

    def _announce(self):
        """The attaching command says where the experiment is."""


def _program():
    return " ".join(getattr(sys, "orig_argv", sys.argv)) or "python"
