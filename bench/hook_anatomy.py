"""What the hook's instructions do, per event: each one named by the function of tracetop's it was inlined from.

    python bench/hook_anatomy.py WORKLOAD SMALL LARGE [--lines] [--top 40]

Runs WORKLOAD (as bench/run.py finds it) at the two sizes as a default `tracetop run` under
`valgrind --tool=callgrind --dump-instr=yes`, and counts each instruction of the hooks (tracetop's functions
named hook_*: the paths every event takes) executed at LARGE less at SMALL, per event between them. An
instruction is named by the innermost function its code was inlined from: the call tree's (tt_calltree_*), the
predictor's (tt_predict_*), the clock's (tt_fast_now), a record's (tt_stream_enter_*, tt_record_commit_at), the
hook's own (hook_event) ... or, with --lines, by its source line. The names come from a twin of the installed
extension built with debug info, whose code is checked to be the installed one's, byte for byte (debug
information does not change what GCC generates). Other functions of tracetop's (out of the hooks' paths: a call
tree's lookup, asyncio's steps) are listed by name. Counts are exact, so one run at each size suffices; under
valgrind a program runs ~50 times slower, so its clock deltas take the record forms of long ones.
"""

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import run as bench  # bench/run.py: the workloads, the command of a default run, the events of a trace

HERE = Path(__file__).resolve().parent
# What each function inlined into the hooks does, by its name's start (the first that matches).
CONCEPTS = (
    ("the hook itself: its arguments, which event, its return", ("hook_",)),
    ("the thread's stream and its chunk's room", ("tt_fast_stream", "tt_record_room")),
    (
        "the region of a call (its code object's, its C function's)",
        ("frame_code", "tt_code_entry", "tt_method_def", "tt_cfunction_", "tt_tasks_awaited"),
    ),
    ("the clock", ("__rdtsc", "tt_fast_now")),
    ("the paths' tests: the delta and its forms' bounds, the entry, calls not recorded", ("tt_fast_",)),
    ("the call tree (the profile, the stack of open calls)", ("tt_calltree_",)),
    ("the predictor (ENTER_PREDICTED)", ("tt_predict_", "tt_stream_predict_")),
    ("the record: its bytes, their publication", ("tt_stream_", "tt_record_", "tt_put_varint")),
)
POSITION = re.compile(r"^(0x[0-9a-f]+|\+\d+|-\d+|\*)(\s|$)")
ADDRESS = re.compile(r"^0x[0-9a-f]+$")
NAMED = re.compile(r"^(c?)(ob|fn)=\((\d+)\)(?: (.*))?$")


def extension():
    """The installed extension's path."""
    import tracetop._tracetop as native

    return Path(native.__file__)


def text_section(shared_object, workdir):
    out = workdir / (shared_object.name + ".text")
    subprocess.run(["objcopy", "-O", "binary", "--only-section=.text", str(shared_object), str(out)], check=True)
    return out.read_bytes()


def debug_twin(installed, workdir):
    """The extension built again with debug information, its code the installed one's (else exits)."""
    build = workdir / "build"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for argv in (
        [
            "meson",
            "setup",
            str(build),
            str(HERE.parent),
            "--buildtype=release",
            "-Db_ndebug=if-release",
            "-Ddebug=true",
        ],
        ["ninja", "-C", str(build), installed.name],
    ):
        done = subprocess.run(argv, env=env, capture_output=True, text=True)
        if done.returncode:
            sys.exit(
                f"hook_anatomy.py: building the twin with debug information failed: {argv[0]}: "
                + (done.stdout + done.stderr).strip().splitlines()[-1]
            )
    twin = build / installed.name
    if text_section(twin, workdir) != text_section(installed, workdir):
        sys.exit(
            f"hook_anatomy.py: {installed} is not built from this tree's sources (its code differs from a "
            "fresh build's): reinstall it (make .venv/.installed)"
        )
    return twin


def instruction_costs(out_file, shared_object):
    """{(function, address): instructions} of the functions of shared_object in one callgrind output file
    (--dump-instr=yes), self cost: addresses are the object's own."""
    costs = collections.Counter()
    names = {"ob": {}, "fn": {}}
    inside = False
    function = None
    address = 0
    after_call = False
    with open(out_file) as lines:
        for line in lines:
            named = NAMED.match(line.rstrip("\n"))
            if named:
                called, kind, number, name = named.groups()
                if name:
                    names[kind][number] = name
                if not called:
                    if kind == "ob":
                        inside = names["ob"][number] == str(shared_object)
                    else:
                        function = names["fn"][number]
                continue
            if line.startswith("calls="):
                after_call = True  # the next position line is the call's inclusive cost, not self
                continue
            position = POSITION.match(line)
            if not position:
                continue
            step = position.group(1)
            if step.startswith("0x"):
                address = int(step, 16)
            elif step[0] in "+-":
                address += int(step)
            if after_call:
                after_call = False
                continue
            fields = line.split()
            if inside and len(fields) > 2:
                costs[function, address] += int(fields[2])
    return costs


def callgrind(argv, workdir, name, shared_object):
    subprocess.run(
        ["valgrind", "--tool=callgrind", "--dump-instr=yes", f"--callgrind-out-file={workdir / name}.%p", *argv],
        cwd=workdir,
        env=bench.ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    costs = collections.Counter()
    for out_file in workdir.glob(f"{name}.*"):
        costs.update(instruction_costs(out_file, shared_object))
    return costs


def inlined_from(twin, addresses, lines):
    """{address: the innermost function of tracetop's its code comes from (with --lines, its source line too)}.
    addr2line -a -i -f gives each address on a line of its own, then a function and its place for each level of
    inlining, innermost first."""
    report = subprocess.run(
        ["addr2line", "-a", "-i", "-f", "-e", str(twin), *(hex(a) for a in addresses)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    names = {}
    for i, line in enumerate(report):
        if ADDRESS.match(line) and i + 2 < len(report):
            function, place = report[i + 1], report[i + 2].rsplit("/", 1)[-1].split(" ")[0]
            names[int(line, 16)] = f"{place:22} {function}" if lines else function
    return names


def is_hook(function):
    """One of the hooks: the functions every event takes (src/ext/profilehook.c names them hook_*)."""
    return function.startswith("hook")


def print_largest(costs, between, top):
    """The `top` largest of costs per event, those of 0.05 or more."""
    for name, cost in costs.most_common(top):
        if abs(cost) / between >= 0.05:
            print(f"{cost / between:8.2f}  {name}")


def concept(function):
    return next((name for name, starts in CONCEPTS if function.startswith(starts)), "other")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload")
    parser.add_argument("small", type=int)
    parser.add_argument("large", type=int)
    parser.add_argument("--lines", action="store_true", help="name each instruction by its source line")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    script = bench.workload(args.workload)
    if not script.is_file():
        sys.exit(f"hook_anatomy.py: no workload {script}")
    for tool in ("valgrind", "meson", "ninja", "addr2line", "objcopy"):
        if not shutil.which(tool) and not (Path(sys.executable).parent / tool).exists():
            sys.exit(f"hook_anatomy.py: needs {tool}")
    installed = extension()
    with tempfile.TemporaryDirectory(prefix="tracetop-hook-anatomy-") as tmp:
        workdir = Path(tmp)
        twin = debug_twin(installed, workdir)
        costs, events = {}, {}
        for size in (args.small, args.large):
            (workdir / f"run-{size}").mkdir()
            argv, trace = bench.command("tracetop+summary", script, size, workdir / f"run-{size}", 0)
            costs[size] = callgrind(argv, workdir, f"run-{size}", installed)
            events[size] = bench.traced_events(trace)
        between = events[args.large] - events[args.small]
        difference = collections.Counter(costs[args.large])
        difference.subtract(costs[args.small])
        names = inlined_from(
            twin, sorted({address for function, address in difference if is_hook(function)}), args.lines
        )
    by_name, by_concept = collections.Counter(), collections.Counter()
    by_hook, elsewhere = collections.Counter(), collections.Counter()
    for (function, address), cost in difference.items():
        if is_hook(function):
            name = names.get(address, "?")
            by_name[name] += cost
            by_concept[concept(name.split()[-1])] += cost
            by_hook[function] += cost
        else:
            elsewhere[function] += cost
    print(
        f"{args.workload} {args.small} -> {args.large}: {between:,} events between them; the hooks' "
        f"instructions per event {sum(by_hook.values()) / between:.1f} ("
        + ", ".join(f"{name} {cost / between:.1f}" for name, cost in by_hook.most_common())
        + "), "
        f"tracetop's other functions {sum(elsewhere.values()) / between:.1f}"
    )
    print("the hooks' instructions, by what they do:")
    for name, cost in by_concept.most_common():
        print(f"{cost / between:8.2f}  {name}")
    print("the hooks' instructions, by the function they come from" + (" and its line:" if args.lines else ":"))
    print_largest(by_name, between, args.top)
    print("tracetop's other functions:")
    print_largest(elsewhere, between, args.top)


if __name__ == "__main__":
    sys.exit(main())
