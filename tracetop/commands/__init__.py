"""The commands of the `tracetop` program: module tracetop.commands.<name> has `main(arguments, prog)`,
which returns the exit status."""

# name -> what it does, in the order `tracetop --help` lists them.
COMMANDS = {
    "run": "Run a Python program under measurement; writes an experiment directory",
    "summary": "Text profile of an experiment: top regions by exclusive and inclusive time, visits, "
               "per thread and process",
    "jupyter": "Register the Jupyter kernel \"tracetop\" (`tracetop jupyter install [--user]`)",
    "score": "Estimated trace size per region and region group, as scorep-score; suggests a filter file",
    "convert": "Write an experiment's trace in a standard format: otf2, cubex, perfetto, chrome, speedscope, "
               "pstats, collapsed",
    "top": "Live view of processes measured with --live: time per function, as they run",
    "ctl": "Switch the measurement of a process running with --live on or off",
    "view": "Open an experiment in the web viewer: timeline, profile, flame graph, counters (127.0.0.1); with "
            "--live, the running programs",
    "report": "Write one self-contained HTML file: overview timeline, top regions, flame graph",
}

# The commands that look at an experiment (`tracetop NAME EXP`), as MANIFEST.md lists them; the end of a
# run suggests the first.
EXPERIMENT_VIEWS = ("summary", "view", "score")
