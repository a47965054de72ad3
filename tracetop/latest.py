"""The experiment a command looks at when it is named none (`tracetop summary`): the latest one in the working
directory. And whether an experiment is still being measured, so that what it lacks is not called a crash."""

import os

from tracetop import messages
from tracetop.experiment import CUT_SHORT, describe_problems, read_small_file
from tracetop.messages import CommandError

# What MANIFEST.md says of a run until its end rewrites it (tracetop.experiment).
NOT_ENDED = "- ended: not normally, or not yet"


def _started(path):
    """When the measurement in directory `path` began (config.txt is its first file), or None: not an experiment."""
    if not os.path.isdir(os.path.join(path, "trace")):
        return None
    for name in ("config.txt", "trace"):
        try:
            return os.stat(os.path.join(path, name)).st_mtime_ns
        except OSError:
            pass
    return None


def find_latest(directory="."):
    """The name of the experiment in `directory` that began last, or None."""
    try:
        entries = os.listdir(directory)
    except OSError as problem:
        raise CommandError(f"cannot list {directory}: {problem.strerror}") from None
    started = ((_started(os.path.join(directory, name)), name) for name in entries)
    return max(((when, name) for when, name in started if when is not None), default=(None, None))[1]


def running(experiment):
    """The pids of the experiment's processes that are still being measured: its MANIFEST.md says it has not
    ended, and the process of a trace/<pid>/ is alive."""
    manifest = os.path.join(experiment, "MANIFEST.md")
    try:
        if not any(line.startswith(NOT_ENDED) for line in read_small_file(manifest).splitlines()):
            return []
    except (FileNotFoundError, NotADirectoryError):  # no experiment, or one whose start failed: nothing says it runs
        return []
    except OSError as problem:
        if manifest not in _told_unreadable:
            _told_unreadable.add(manifest)
            messages.warning(f"{manifest}: {problem.strerror or problem}; read as if the run had ended")
        return []
    try:
        pids = [int(name) for name in os.listdir(os.path.join(experiment, "trace")) if name.isdigit()]
    except OSError:
        return []
    return [pid for pid in sorted(pids) if _alive(pid)]


# The MANIFEST.md files found unreadable, each said once however often a command asks whether it runs.
_told_unreadable = set()


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def experiment_argument(parser):
    """EXP, the positional argument of the commands that look at an experiment: optional."""
    parser.add_argument(
        "experiment",
        nargs="?",
        metavar="EXP",
        help="the experiment directory (default: the latest in the working directory)",
    )


def chosen(experiment):
    """The experiment named, or the latest here (said on stderr); notes when it is still being measured."""
    if experiment is None:
        experiment = find_latest()
        if experiment is None:
            raise CommandError("no experiment named and none in this directory: name one (tracetop COMMAND EXP)")
        messages.note(f"the latest experiment here: {experiment}")
    alive = running(experiment)
    if alive:
        messages.note(
            f"{experiment} is still being measured (process {', '.join(map(str, alive))} running): "
            "this is what it has written so far"
        )
    return experiment


def cut_short(experiment):
    """What MANIFEST.md says of processes whose writer had to stop before their end (a full disk), one line each."""
    try:
        manifest = read_small_file(os.path.join(experiment, "MANIFEST.md"))
    except (OSError, ValueError):  # said once already by running(), which every command asks first
        return []
    return [line[2:] for line in manifest.splitlines() if line.startswith(CUT_SHORT)]


def tell_problems(experiment, problems, corrupt):
    """What a reader found cut or damaged in `experiment`'s trace, said once: a warning, but a note while the
    experiment is still being measured (its trace ends where its writers have got to: not a crash); and why a
    writer stopped early, as MANIFEST.md says it."""
    for line in cut_short(experiment):
        messages.warning(line)
    if not problems:
        return
    if running(experiment):
        messages.note(f"still being written: {describe_problems(problems, corrupt)}")
    else:
        messages.warning(describe_problems(problems, corrupt))
