"""The C subsystems' layout (ARCHITECTURE.md), checked.

1. Every header is included by its bare name, so each name is unique across src/.
2. The folders' include graph is the one ARCHITECTURE.md draws (ALLOWED below), which has no cycle.
   meson.build enforces it already by giving each library only the include paths of what it may use; this
   check says it in one place and fails on an edge that nobody meant, even one meson would let through.
3. With the extensions' paths given, the measured process's extension (tracetop._tracetop) holds no code of the
   subsystems that read a trace: none of their functions is defined in it.

Usage: check_layout.py SRC_DIR [MEASURE_EXTENSION READ_EXTENSION]
"""

import collections
import os
import re
import subprocess
import sys

# What each folder may include, besides itself. One direction: a folder never includes one that includes it.
ALLOWED = {
    "util": set(),
    "format": {"util"},
    "live": {"util", "format"},
    "record": {"util", "format", "live"},
    "read": {"util", "format"},
    "analysis": {"util", "format", "read"},
    "index": {"util", "format", "read"},
    "export": {"util", "format", "read", "analysis"},
    "top": {"util", "format", "live"},
    "mpi": {"format"},
    "pyshared": {"util"},
    "ext": {"util", "format", "live", "record", "pyshared", "mpi"},
    "readext": {"util", "format", "live", "read", "analysis", "index", "export", "top", "pyshared"},
}
# The folders whose code only reads a trace: never linked into the measured process.
READING = ("read", "analysis", "index", "export", "top", "readext")

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(src):
    for folder in sorted(os.listdir(src)):
        for name in sorted(os.listdir(os.path.join(src, folder))):
            if name.endswith((".c", ".h")):
                yield folder, name, os.path.join(src, folder, name)


def include_graph(src):
    """{folder: {folder it includes: [file -> header, ...]}}, and the problems found on the way."""
    problems, home = [], {}
    for folder, name, _ in sources(src):
        if name.endswith(".h"):
            if name in home:
                problems.append(f"header {name} is in both src/{home[name]} and src/{folder}")
            home[name] = folder
    graph = collections.defaultdict(lambda: collections.defaultdict(list))
    for folder, name, path in sources(src):
        with open(path, encoding="utf-8") as f:
            for header in INCLUDE.findall(f.read()):
                if header not in home:
                    problems.append(f"src/{folder}/{name} includes {header}, which is in no folder of src/")
                elif home[header] != folder:
                    graph[folder][home[header]].append(f"{name} -> {header}")
    return graph, problems


def cycle(edges):
    """A cycle among the folders as a list, or None."""
    state = {}

    def visit(node, path):
        state[node] = "open"
        for nxt in edges.get(node, ()):
            if state.get(nxt) == "open":
                return path[path.index(nxt) :] + [nxt] if nxt in path else [node, nxt]
            if nxt not in state:
                found = visit(nxt, path + [nxt])
                if found:
                    return found
        state[node] = "done"
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node, [node])
            if found:
                return found
    return None


def defined_functions(path):
    """The names of the functions defined in an object, a static library or a shared object (local ones too)."""
    out = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if len(line.split()) == 3 and line.split()[1] in "tT"}


def main(argv):
    if len(argv) not in (2, 4):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    src = argv[1]
    graph, problems = include_graph(src)
    for folder, uses in sorted(graph.items()):
        for used, why in sorted(uses.items()):
            if used not in ALLOWED.get(folder, set()):
                problems.append(f"src/{folder} includes src/{used}, against ARCHITECTURE.md: {', '.join(why)}")
    loop = cycle({folder: set(uses) for folder, uses in graph.items()})
    if loop:
        problems.append("include cycle between folders: " + " -> ".join(loop))
    if cycle(ALLOWED):
        problems.append("ALLOWED itself has a cycle")
    if len(argv) == 4:
        measured, reading = defined_functions(argv[2]), defined_functions(argv[3])
        reading_only = set()
        for folder, name, path in sources(src):
            if folder in READING and name.endswith(".c"):
                with open(path, encoding="utf-8") as f:
                    reading_only |= set(re.findall(r"^\w[\w \*]*?\b(tt_\w+)\s*\(", f.read(), re.M))
        reading_only &= reading
        if not reading_only:
            problems.append(f"found none of the reading subsystems' functions in {argv[3]}: is it stripped?")
        leaked = sorted(reading_only & measured)
        if leaked:
            problems.append(f"the measured process's extension holds reading code: {', '.join(leaked[:10])}")
        print(
            f"{os.path.basename(argv[2])}: {len(measured)} functions, none of the {len(reading_only)} that read a trace"
            if not leaked
            else ""
        )
    for folder, uses in sorted(graph.items()):
        print(f"src/{folder} -> {', '.join(f'src/{u}' for u in sorted(uses))}")
    for problem in problems:
        print("check_layout:", problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
