"""A measurement of this process, from _tracetop.start() to _tracetop.stop(), with the experiment directory
it fills. `tracetop run` and tracetop.start() both make one."""

import _signal  # signal's C half: signal itself imports enum, start-up that every run would pay
import _thread  # not threading: it is imported when the program imports it (src/ext/threadwatch.c)
import atexit
import os
import sys
import time
from _signal import SIGTERM

import tracetop
from tracetop import _reader, _tracetop, compat, messages
from tracetop.commands import EXPERIMENT_VIEWS
from tracetop.experiment import (
    Experiment,
    Provenance,
    convert,
    describe_exit,
    describe_loss,
    describe_problems,
    describe_stats,
    describe_unbounded,
    not_recorded,
    python_version,
)
from tracetop.options import from_keywords
from tracetop.sizes import format_size

# Code objects from this package are never recorded: tracetop's own frames must not appear in a trace.
OWN_CODE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "")

# While a measurement follows child processes, this variable names its experiment directory; child processes
# that run Python inherit it and measure themselves into that experiment (tracetop/child.py).
FOLLOW_VARIABLE = "TRACETOP_FOLLOW_INTO"


class Session:
    """A measurement in progress, filling the experiment directory `directory`. It ends with stop() or at
    the end of a `with` block; at the latest when the process exits, by os._exit() too."""

    # Whether the threads already running when it starts are measured, besides the one that starts it.
    other_threads = True
    # Whether a trace that is not to be kept (--no-trace) stays until drop_trace(): something is made of it first.
    trace_shown_first = False
    # Whether it measures a process tracetop attached to: the calls running as it starts are recorded as
    # running since an unknown time, and the thread that starts it is tracetop's (tracetop/attach.py).
    attached = False

    def __init__(self, experiment, configuration, provenance, process):
        self.experiment = experiment
        self.configuration = configuration
        # How the program ended, where known, recorded in MANIFEST.md: its exit status, or what it passed to sys.exit()
        # until the measurement stops (what makes a status of it calls functions a hook would record).
        self.exit_status = None
        self.stats = None  # from _tracetop.stop()
        self._provenance = provenance
        self._process = process  # what _tracetop.start() and fork_continue() are told about this process
        self._pid = os.getpid()  # a forked child inherits this object, and measures on only if it follows
        self._joined = False  # measured into an experiment another process made (a parent, MPI rank 0)
        self._job = None  # the MPI job of an MPI rank (mpi.Job)
        self._stopped = False
        self._not_recorded = []  # what the measurement said at its start that it does not record
        self._stopping = _thread.allocate_lock()
        self._real_exit = os._exit
        self._exit = _exit_stopping(self, self._real_exit)
        # os.execv and os.execve (which os.execl ... call): the new program replaces this one.
        self._real_execs = {"execv": os.execv, "execve": os.execve}
        self._execs = {name: _exec_stopping(self, real) for name, real in self._real_execs.items()}

    @property
    def directory(self):
        return self.experiment.path

    @classmethod
    def begin(cls, configuration, program, command):
        """Starts measuring; `program` names what runs, `command` is the command line that runs it."""
        if _tracetop.active():
            raise _tracetop.TraceError("a measurement is already running in this process")
        messages.verbose = configuration["verbose"]
        job = _mpi().job(os.environ) if configuration["mpp"] == "mpi" else None
        requested = configuration["output"] or (job and _mpi().default_directory(job))
        if job and job.rank > 0:  # rank 0 makes the experiment, and says what there is to say about it
            experiment = Experiment.join(_mpi().wait_for_experiment(requested, job))
            session = cls._start(
                experiment, configuration.replace("output", experiment.path), None, program, command, job
            )
            session._joined = True
            return session._measuring_program()
        for note in configuration.notes:
            messages.note(note)
        experiment = Experiment.create(
            requested, shared=job is not None and job.size > 1, overwrite=configuration["overwrite"], program=program
        )
        if job and job.size > 1:
            _mpi().made_experiment(experiment.path, job)
        configuration = configuration.replace("output", experiment.path)
        provenance = Provenance(
            command=command,
            program=program,
            working_directory=os.getcwd(),
            configuration=configuration.lines(),
            started=time.time(),
        )
        # Child processes read config.txt, and may run elsewhere: its filter file is named from anywhere.
        written = (
            configuration.replace("filter", os.path.abspath(configuration["filter"]))
            if configuration["filter"]
            else configuration
        )
        try:
            experiment.write("config.txt", "\n".join(written.lines()) + "\n")
            session = cls._start(experiment, configuration, provenance, program, command, job)
        except BaseException:
            experiment.discard()
            raise
        experiment.write_manifest(provenance)  # says "not ended" until stop() rewrites it
        messages.detail(f"measuring {program} into {os.path.join(experiment.shown, '')}")
        for line in configuration.lines():
            messages.detail(f"  {line}")
        return session._measuring_program()

    @classmethod
    def join(cls, experiment, configuration, program, command):
        """Starts measuring a child process into the experiment of the measurement it descends from."""
        messages.verbose = configuration["verbose"]
        session = cls._start(experiment, configuration, None, program, command)
        session._joined = True
        return session._measuring_program()

    @classmethod
    def _start(cls, experiment, configuration, provenance, program, command, job=None):
        if job:
            _mpi().check()
        # In every measured process, children and ranks too: a spawned worker imports the program's main module,
        # `import scorep` and all, before it runs a task.
        if configuration["scorep_compat"]:
            compat.install()
        else:
            compat.uninstall()
        # host: the node of the system tree in OTF2 and CUBE.
        attributes = {
            "command": command,
            "tracetop_version": tracetop.__version__,
            "python_version": python_version(),
            "host": os.uname().nodename,
        }
        if job:
            attributes["mpi_rank"] = str(job.rank)
        if configuration["keep"]:
            attributes["keep"] = str(configuration["keep"])  # what tells a reader dropped chunks from damage
        process = {"memory": configuration["memory"], "name": program, "attributes": attributes}
        messages.keep_stderr()
        session = cls(experiment, configuration, provenance, process)
        session._job = job
        # Caught first: a worker that is sent SIGTERM as it starts must not leave a trace unwritten.
        _tracetop.catch_sigterm(session._terminated)
        try:
            _tracetop.start(
                experiment.path,
                instrumenter=configuration["instrumenter"],
                instrumenter_enabled=False,  # switched as configured once the session is made
                c_calls=configuration["c_calls"],
                exclude_paths=(OWN_CODE,),
                other_threads=cls.other_threads,
                attached=cls.attached,
                filter=configuration["filter"],
                live=configuration["live"],
                keep=configuration["keep"],
                **process,
            )
        except BaseException:
            _tracetop.release_sigterm()
            raise
        if job:
            _tracetop.mpi_attach(_mpi().LIBRARY)
        if configuration["objects"]:
            session._count_objects()
        session._not_recorded = not_recorded()
        for line in session._not_recorded:
            messages.note(line)
        if configuration["live"]:
            _note_live_channel()
        session._measure_on_exit()
        if configuration["follow"]:
            os.environ[FOLLOW_VARIABLE] = experiment.path
        return session

    def _count_objects(self):
        """--objects: where this Python cannot count them, one line says so and the run goes on without."""
        try:
            _tracetop.objects_enable()
            how = (
                "CPython's reference tracer"
                if sys.version_info >= (3, 13)
                else "wedges on libpython's _Py_NewReference and _Py_Dealloc"
            )
            said = f"counted exactly, by type and creating region, with {how}; bytes are each type's fixed part"
            if sys.version_info < (3, 13, 3):
                said += (
                    f"; Python {python_version()} frees the objects whose last reference its interpreter loop "
                    "drops (a local rebound, a temporary, a loop's iterator) without telling (CPython gh-130382): "
                    "they count as destroyed when their address is used again, so a few may show as alive at "
                    "the end"
                )
            if _tracetop.hook_in_use() in ("profile", "trace"):
                said += (
                    "; to report calls to the profile and trace hooks CPython makes frame objects (and, for C "
                    "methods, bound methods)"
                    + (" and ints of some events' offsets" if sys.version_info >= (3, 12) else "")
                    + ", counted too: --instrumenter=monitoring makes none"
                )
        except _tracetop.TraceError as error:
            messages.note(f"{error}; the run goes on without --objects")
            said = f"not counted: {error}"
        if self._provenance:
            self._provenance.objects = said

    def _measuring_program(self):
        """Last, so that none of tracetop's own calls is recorded: the measurement shows the program alone."""
        if self.configuration["instrumenter_enabled"]:
            _tracetop.instrumenter_enable()
        return self

    def stop(self):
        """Ends the measurement: closes the trace, writes profile.txt and MANIFEST.md, says where the
        experiment is; returns the writer's statistics. Does nothing a second time, and a stop made while
        another thread stops (SIGTERM while the program exits) waits for that one."""
        with self._stopping:
            return self._stop()

    def _stop(self):
        global _measuring
        if self._stopped:
            return self.stats
        _tracetop.instrumenter_disable()  # what follows is tracetop's own work, not the program's
        if os.getpid() != self._pid:  # a forked child that does not measure: its hooks are gone already
            return self.stats
        self._stopped = True
        self.exit_status = _exit_status(self.exit_status)
        _measuring = None
        atexit.unregister(self._stop_at_exit)
        if os._exit is self._exit:
            os._exit = self._real_exit
        for name, wrapped in self._execs.items():
            if getattr(os, name) is wrapped:
                setattr(os, name, self._real_execs[name])
        if os.environ.get(FOLLOW_VARIABLE) == self.directory:
            del os.environ[FOLLOW_VARIABLE]  # children started from now on are not measured
        with _CtrlC() as interrupts:
            messages.detail("finishing: the trace's last chunks, profile.txt, MANIFEST.md")
            try:
                # How it ended in the trace's words too, which are MANIFEST.md's (`summary` says them).
                ended = None if self.exit_status is None else describe_exit(self.exit_status)
                limits = not_recorded() if _tracetop.active() else []
                for line in limits:
                    if line not in self._not_recorded:  # what the program took up since the start (greenlet)
                        messages.note(line)
                # None: SIGTERM came before the measurement started
                self.stats = _tracetop.stop(ended=ended, not_recorded=limits)
                if self.stats is not None and self.stats["lost"]:
                    messages.warning(f"trace cut short in process {os.getpid()}: {describe_loss(self.stats)}")
                if self.stats is not None and self.stats["keep_errno"]:
                    messages.warning(f"--keep in process {os.getpid()}: {describe_unbounded(self.stats)}")
                if self.stats is not None and not self._joined:
                    self._finish(interrupts)
            finally:
                # Until here SIGTERM waits for the files to be complete (a pool worker is sent it as it exits).
                _tracetop.release_sigterm()
        return self.stats

    def _finish(self, interrupts):
        """What the process that made the experiment writes at the end: profile.txt, MANIFEST.md; what is left of
        profile.txt and the conversions once `interrupts` (a _CtrlC) says to abandon them is not made."""
        if self._job and self._job.size > 1 and self.exit_status != -SIGTERM:
            _mpi().wait_for_ranks(self.directory, self._job.size)  # those that have not ended are cut in profile.txt
        made = self._provenance
        made.ended, made.exit_status, made.stats = time.time(), self.exit_status, self.stats
        problems, corrupt, abandoned = [], False, []
        try:
            if self.configuration["profile"]:
                if interrupts.abandon:
                    abandoned.append("profile.txt")
                else:
                    problems, corrupt = self.experiment.write_profile()
            for format in self.configuration["formats"]:
                if interrupts.abandon:
                    abandoned.append(_reader.default_name(format))
                    continue
                path, result = convert(self.experiment.path, format)
                messages.detail(f"wrote {path} ({format_size(result['bytes'])})")
            if not self.configuration["trace"] and not self.trace_shown_first:
                self.experiment.remove_trace()
        finally:
            self.experiment.write_manifest(made)
        if abandoned:
            messages.warning(f"Ctrl-C again: {', '.join(abandoned)} abandoned; MANIFEST.md says how the run ended")
        self._announce()
        if problems and not self.stats["lost"]:
            messages.warning(describe_problems(problems, corrupt))

    def drop_trace(self):
        """Removes the trace that was kept for trace_shown_first, when it is not to be kept."""
        if not self.configuration["trace"] and self.stats is not None and not self._joined:
            self.experiment.remove_trace()
            self.experiment.write_manifest(self._provenance)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.stop()

    def _measure_on_exit(self):
        """Stops the measurement when the process ends, by os._exit() too; follows it into forked children."""
        global _measuring
        _measuring = self
        atexit.register(self._stop_at_exit)
        os._exit = self._exit
        for name, wrapped in self._execs.items():
            setattr(os, name, wrapped)

    def _terminated(self):
        """SIGTERM: the process dies by it once the measurement has stopped (see src/ext/terminate.c)."""
        self.exit_status = -SIGTERM
        self._stop_at_exit()

    def _after_fork(self, hook_frame):
        """In a child forked while measuring: measures on into the same experiment, or not at all. hook_frame is
        the at-fork hook's, the first of the frames that return once the child measures."""
        global _measuring
        continued = False
        pid = os.getpid()
        if self.configuration["follow"] and not _forked_to_exec():
            # Caught first: a worker that is sent SIGTERM as it starts must not leave a trace unwritten.
            _tracetop.catch_sigterm(self._terminated)
            try:
                # Last: from here on what this process calls is recorded, and tracetop calls nothing more.
                continued = _tracetop.fork_continue(self.directory, hook_frame, **self._process)
            except _tracetop.TraceError as failure:
                messages.warning(f"process {pid} is not measured: {failure}")
        if continued:
            self._pid = pid
            self._joined = True
            _tracetop.end_with_last_thread(self._program_ended)
        else:
            _tracetop.release_sigterm()
            _tracetop.fork_leave()
            _measuring = None

    def _program_ended(self):
        """In a child forked from a thread other than the main one, once the program's last thread has ended: the
        process ends as it would without tracetop, with status 0, when this has stopped the measurement."""
        self.exit_status = 0
        self._stop_at_exit()

    def _stop_at_exit(self):
        """stop() at interpreter exit or os._exit(), where nothing could catch a failure: it is reported."""
        try:
            self.stop()
        except _tracetop.TraceError as failure:
            messages.error(str(failure))
        except Exception as failure:
            messages.internal_error(failure)

    def _other_processes(self):
        """How many processes besides this one wrote into the experiment (followed children, say)."""
        try:
            names = os.listdir(os.path.join(self.experiment.path, "trace"))
        except OSError:
            return 0
        return sum(name.isdigit() and name != str(os.getpid()) for name in names)

    def _announce(self):
        shown = self.experiment.shown
        counts = f"{self.stats['events']} events, {format_size(self.stats['bytes'])}" if self.stats else ""
        others = self._other_processes() if counts else 0
        if others:  # their counts are theirs: the sum would need their ends, which need not have come
            counts = f"this process: {counts}; {others} other process{'es' if others > 1 else ''} measured"
        counts = f" ({counts})" if counts else ""
        see = (
            f"tracetop {EXPERIMENT_VIEWS[0]} {messages.shell_quote(shown)}"
            if self.configuration["trace"]
            else os.path.join(shown, "profile.txt")
        )
        messages.say(f"experiment in {os.path.join(shown, '')}{counts}; see: {see}")
        if self.stats:
            messages.detail(f"recorded {describe_stats(self.stats)}")


class _CtrlC:
    """SIGINT while the measurement finishes (the program has ended, Ctrl-C comes late): the first says that
    finishing goes on, for the trace must end complete and MANIFEST.md say how the run ended; from the second on,
    `abandon` is true, and what is left of profile.txt and the conversions is not made. Only the main thread
    handles signals: stopped from another, finishing leaves SIGINT as it is."""

    def __init__(self):
        self.times = 0
        self._before = None  # the handler to put back, once one of ours is in place

    @property
    def abandon(self):
        return self.times > 1

    def __enter__(self):
        before = _signal.getsignal(_signal.SIGINT)
        # Not one that Python did not set (it could not be put back), nor SIG_IGN: Ctrl-C ignored stays so.
        if before is not None and before != _signal.SIG_IGN:
            try:
                _signal.signal(_signal.SIGINT, self._caught)
                self._before = before
            except ValueError:  # not the main thread
                pass
        return self

    def __exit__(self, *exc_info):
        if self._before is not None:
            _signal.signal(_signal.SIGINT, self._before)

    def _caught(self, signal_number, frame):
        self.times += 1
        if self.times == 1:
            messages.note("finishing the measurement (profile.txt, MANIFEST.md): Ctrl-C again abandons profile.txt")


def start(output=None, **options):
    """Starts measuring this process, all its threads, into the experiment directory `output` (default:
    tracetop-YYYYMMDD_HHMMSS_<pid> in the working directory). `options` are those of `tracetop run` by
    their Python names (instrumenter="trace", c_calls=False, memory="256M", profile=False, ...); the
    TRACETOP_ and SCOREP_ environment variables apply as for `tracetop run`. Returns the Session."""
    configuration = from_keywords({"output": output, **options}, os.environ)
    return Session.begin(configuration, program=sys.argv[0] or "python", command=command_line())


def _mpi():
    """tracetop.mpi, imported for an MPI job only: start-up that every other run would pay."""
    from tracetop import mpi

    return mpi


def command_line():
    """The command line of this process, as a shell would take it."""
    return " ".join(map(messages.shell_quote, getattr(sys, "orig_argv", sys.argv)))


# The session measuring this process, if any: forked children follow it.
_measuring = None


def _resume_after_fork():
    try:
        _tracetop.fork_resume()
    except _tracetop.TraceError as failure:
        messages.error(f"measurement stopped: {failure}")


def _after_fork_in_parent():
    # Python 3.13 counts the process's threads for its fork warning after these hooks: tracetop's threads start
    # again once os.fork has returned. A fork from another thread is warned of anyway (the program has two).
    # Before 3.13 the warning comes first, and a C call's return need not be a point where pending calls run.
    if sys.version_info >= (3, 13) and _thread.get_ident() == _thread._get_main_thread_ident():
        _tracetop.fork_resume_later(_resume_after_fork)
    else:
        _resume_after_fork()


# In a process that does not measure itself, what measures each child it forks (tracetop/child.py: the workers
# of multiprocessing's fork server), or None.
join_forked = None


def _after_fork_in_child():
    """After threading's at-fork hook in a forked child, whose work is not the program's: from here on the child's
    calls are recorded."""
    if _measuring is not None:
        _measuring._after_fork(sys._getframe())
    elif join_forked is not None:
        join_forked()


os.register_at_fork(before=_tracetop.fork_prepare, after_in_parent=_after_fork_in_parent)
_tracetop.after_fork_in_child(_after_fork_in_child)


def _forked_to_exec():
    """Whether this forked child is subprocess's, which runs its preexec_fn and then execs: if what it execs is
    Python, it is measured then (tracetop/child.py)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "_execute_child" and frame.f_globals.get("__name__") == "subprocess":
            return True
        frame = frame.f_back
    return False


def _note_live_channel():
    """Says so when this process's live channel could not have its usual name (another user made it first):
    `tracetop top` still finds it, under a name with a random tail (src/live/live.c)."""
    usual = f"/dev/shm/tracetop-{os.geteuid()}-{os.getpid()}"
    try:
        ours = os.lstat(usual).st_uid == os.geteuid() and os.path.isfile(usual)
    except OSError:
        ours = False
    if not ours:
        messages.note(f"{usual} is taken by another user: the live channel has a name of its own")


def _exit_status(code):
    """The exit status of the process after sys.exit(code) (an exit status is one already); None when unknown."""
    if code is None:
        return None
    return int(code) if isinstance(code, int) else 1


def _exec_stopping(session, real_exec):
    """os.execv()/os.execve() while measuring: the trace ends complete where this program ends, and a Python
    program exec'd is measured on as a child of the experiment (tracetop/child.py). Should the exec fail, the
    rest of the program runs unmeasured."""

    def _exec(path, *arguments):
        followed = os.environ.get(FOLLOW_VARIABLE)
        session._stop_at_exit()
        if followed is not None:
            os.environ[FOLLOW_VARIABLE] = followed
        return real_exec(path, *arguments)

    return _wraps(_exec, real_exec)


def _exit_stopping(session, real_exit):
    """os._exit() while measuring: stops the measurement first, so that the trace is complete."""

    def _exit(status):
        session.exit_status = status
        session._stop_at_exit()
        real_exit(status)

    return _wraps(_exit, real_exit)


def _wraps(wrapper, real):
    """What functools.wraps(real)(wrapper) makes of a builtin, without importing functools at every start."""
    for name in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(wrapper, name, getattr(real, name))
    wrapper.__wrapped__ = real
    return wrapper
