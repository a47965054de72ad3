"""The commands of the `tracetop` program: module tracetop.commands.<name> has `main(arguments, prog)`,
which returns the exit status."""

# name -> what it does, in the order `tracetop --help` lists them.
COMMANDS = {
    "run": "Run a Python program under measurement; writes an experiment directory",
    "summary": "Text profile of an experiment: top regions by exclusive and inclusive time, visits, "
               "per thread and process",
    "view": "Open an experiment in the web viewer: timeline, profile, flame graph, counters (127.0.0.1)",
    "report": "Write one self-contained HTML file: overview timeline, top regions, flame graph",
}

# The commands that look at an experiment (`tracetop NAME EXP`), as MANIFEST.md lists them; the end of a
# run suggests the first.
EXPERIMENT_VIEWS = ("summary", "view")
