"""A measurement of this process, from _tracetop.start() to _tracetop.stop(), with the experiment directory
it fills. `tracetop run` and tracetop.start() both make one."""

import atexit
import functools
import os
import platform
import shlex
import sys
import time

import tracetop
from tracetop import _tracetop, compat, messages
from tracetop.commands import EXPERIMENT_VIEWS
from tracetop.experiment import Experiment, Provenance, convert, describe_problems, describe_stats
from tracetop.options import from_keywords
from tracetop.sizes import format_size

# Code objects from this package are never recorded: tracetop's own frames must not appear in a trace.
OWN_CODE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "")


class Session:
    """A measurement in progress, filling the experiment directory `directory`. It ends with stop() or at
    the end of a `with` block; at the latest when the process exits, by os._exit() too."""

    # Whether the threads already running when it starts are measured, besides the one that starts it.
    other_threads = True

    def __init__(self, experiment, configuration, provenance):
        self.experiment = experiment
        self.configuration = configuration
        self.exit_status = None  # how the program ended, where known: recorded in MANIFEST.md
        self.stats = None  # from _tracetop.stop()
        self._provenance = provenance
        self._pid = os.getpid()  # a forked child inherits this object, not the measurement
        self._stopped = False
        self._real_exit = os._exit
        self._exit = _exit_stopping(self, self._real_exit)

    @property
    def directory(self):
        return self.experiment.path

    @classmethod
    def begin(cls, configuration, program, command):
        """Starts measuring; `program` names what runs, `command` is the command line that runs it."""
        if _tracetop.active():
            raise _tracetop.TraceError("a measurement is already running in this process")
        messages.verbose = configuration["verbose"]
        if configuration["scorep_compat"]:
            compat.install()
        unavailable = configuration.unavailable()
        if unavailable:
            messages.note(f"not in this version yet, ignored: {', '.join(unavailable)}")
        experiment = Experiment.create(configuration["output"])
        configuration = configuration.replace("output", experiment.path)
        provenance = Provenance(command=command, program=program, working_directory=os.getcwd(),
                                configuration=configuration.lines(), started=time.time())
        try:
            experiment.write("config.txt", "\n".join(configuration.lines()) + "\n")
            _tracetop.start(
                experiment.path,
                instrumenter=configuration["instrumenter"],
                instrumenter_enabled=False,  # switched as configured once this function is done
                c_calls=configuration["c_calls"],
                memory=configuration["memory"],
                name=program,
                attributes={"command": command, "tracetop_version": tracetop.__version__,
                            "python_version": platform.python_version()},
                exclude_paths=(OWN_CODE,),
                other_threads=cls.other_threads,
                filter=configuration["filter"],
                live=configuration["live"],
            )
        except BaseException:
            experiment.discard()
            raise
        session = cls(experiment, configuration, provenance)
        atexit.register(session._stop_at_exit)
        os._exit = session._exit
        experiment.write_manifest(provenance)  # says "not ended" until stop() rewrites it
        messages.detail(f"measuring {program} into {os.path.join(experiment.shown, '')}")
        for line in configuration.lines():
            messages.detail(f"  {line}")
        # Last, so that none of the calls above is recorded: the measurement shows the program alone.
        if configuration["instrumenter_enabled"]:
            _tracetop.instrumenter_enable()
        return session

    def stop(self):
        """Ends the measurement: closes the trace, writes profile.txt and MANIFEST.md, says where the
        experiment is; returns the writer's statistics. Does nothing a second time."""
        if self._stopped or os.getpid() != self._pid:
            return self.stats
        _tracetop.instrumenter_disable()  # what follows is tracetop's own work, not the program's
        self._stopped = True
        atexit.unregister(self._stop_at_exit)
        if os._exit is self._exit:
            os._exit = self._real_exit
        self.stats = _tracetop.stop()
        made = self._provenance
        made.ended, made.exit_status, made.stats = time.time(), self.exit_status, self.stats
        try:
            problems, corrupt = self.experiment.write_profile() if self.configuration["profile"] else ([], False)
            for format in self.configuration["formats"]:
                path, result = convert(self.experiment.path, format)
                messages.detail(f"wrote {path} ({format_size(result['bytes'])})")
        finally:
            self.experiment.write_manifest(made)
        self._announce()
        if problems:
            messages.warning(describe_problems(problems, corrupt))
        return self.stats

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.stop()

    def _stop_at_exit(self):
        """stop() at interpreter exit or os._exit(), where nothing could catch a failure: it is reported."""
        try:
            self.stop()
        except _tracetop.TraceError as failure:
            messages.error(str(failure))
        except Exception as failure:
            messages.internal_error(failure)

    def _announce(self):
        shown = self.experiment.shown
        counts = f" ({self.stats['events']} events, {format_size(self.stats['bytes'])})" if self.stats else ""
        messages.say(f"experiment in {os.path.join(shown, '')}{counts}; "
                     f"see: tracetop {EXPERIMENT_VIEWS[0]} {shlex.quote(shown)}")
        if self.stats:
            messages.detail(f"recorded {describe_stats(self.stats)}")


def start(output=None, **options):
    """Starts measuring this process, all its threads, into the experiment directory `output` (default:
    tracetop-YYYYMMDD_HHMMSS_<pid> in the working directory). `options` are those of `tracetop run` by
    their Python names (instrumenter="trace", c_calls=False, memory="256M", profile=False, ...); the
    TRACETOP_ and SCOREP_ environment variables apply as for `tracetop run`. Returns the Session."""
    configuration = from_keywords({"output": output, **options}, os.environ)
    return Session.begin(configuration, program=sys.argv[0] or "python", command=command_line())


def command_line():
    """The command line of this process, as a shell would take it."""
    return shlex.join(getattr(sys, "orig_argv", sys.argv))


def _exit_stopping(session, real_exit):
    """os._exit() while measuring: stops the measurement first, so that the trace is complete."""
    @functools.wraps(real_exit)
    def _exit(status):
        session.exit_status = status
        session._stop_at_exit()
        real_exit(status)

    return _exit
