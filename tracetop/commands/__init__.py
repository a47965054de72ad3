"""The commands of the `tracetop` program: module tracetop.commands.<name> has `main(arguments, prog)`,
which returns the exit status."""

# The largest process id: Linux's pid_t is an int, and its pid_max is at most 2**22.
MAX_PID = 2**31 - 1

# name -> what it does, in the order `tracetop --help` lists them.
COMMANDS = {
    "run": "Run a Python program under measurement; writes an experiment directory",
    "summary": "Text profile of an experiment: top regions by exclusive and inclusive time, visits, "
    "per thread and process",
    "jupyter": 'Register the Jupyter kernel "tracetop" (`tracetop jupyter install [--user]`)',
    "score": "Estimated trace size per region and region group, as scorep-score; suggests a filter file",
    "convert": "Write an experiment's trace in a standard format: otf2, cubex, perfetto, chrome, speedscope, "
    "pstats, collapsed",
    "top": "Live view of processes measured with --live: time per function, as they run",
    "ctl": "Switch the measurement of a process running with --live on or off, or end an attached one",
    "attach": "Measure a Python process that is already running, then leave it as it was",
    "view": "Open an experiment in the web viewer: timeline, profile, flame graph, counters (127.0.0.1); with "
    "--live, the running programs",
    "report": "Write one self-contained HTML file: overview timeline, top regions, flame graph",
}

# The commands that look at an experiment (`tracetop NAME EXP`), as MANIFEST.md lists them; the end of a
# run suggests the first.
EXPERIMENT_VIEWS = ("summary", "view", "score")


def pid_argument(text):
    """A process id given on the command line (argparse type): a number that C's pid_t holds."""
    if not text.isdigit() or not 0 < int(text) <= MAX_PID:
        import argparse  # only for a mistake: argparse is most of a measured process's start-up

        raise argparse.ArgumentTypeError(f"not a process id: {text!r}")
    return int(text)
