"""`tracetop convert EXP --to FORMAT [-o OUT]`: the experiment's trace in a standard format."""

import argparse
import re

from tracetop import _reader, messages
from tracetop.commands import COMMANDS
from tracetop.experiment import convert
from tracetop.latest import chosen, experiment_argument, tell_problems
from tracetop.messages import CommandError
from tracetop.sizes import format_size
from tracetop.suggest import ArgumentParser, closest

# JSON formats whose viewers load the whole file into a browser tab: bytes of output per byte of native trace (as
# measured on the tests' programs: bench/convert.py gives the rates), and the size beyond which they fail to open.
JSON_BYTES_PER_TRACE_BYTE = {"chrome": 14, "speedscope": 11}
JSON_OPENS_UP_TO = 300 * 1000 * 1000


def json_too_large(experiment, format, thread=None, start=0, stop=2**64 - 1, limit=JSON_OPENS_UP_TO):
    """A warning when `format` is a JSON format and its file would be larger than its viewers open, else None.
    Estimated from the bytes of the threads converted (one, or all) that their chunks made in [start, stop)."""
    ratio = JSON_BYTES_PER_TRACE_BYTE.get(format)
    if ratio is None:
        return None
    opened = _reader.Trace(experiment)
    trace = 0
    for index, process in enumerate(opened.processes):
        for stream in process["threads"]:
            if thread is None or thread in (stream["name"], str(stream["native_tid"])):
                # Its records as decoded: the writer compresses some chunks, which convert as their records.
                trace += opened.record_bytes(index, stream["stream"], start, stop)
    if trace * ratio <= limit:
        return None
    viewer = "chrome://tracing and Perfetto's UI" if format == "chrome" else "speedscope"
    return (
        f"the {format} file will be about {format_size(trace * ratio)}, more than {viewer} can open "
        f"(a few hundred MB); --to perfetto, --to otf2, `tracetop view` or a part (--from/--until, --thread) "
        "suit a trace this size"
    )


def main(arguments, prog):
    parser = ArgumentParser(prog=prog, description=f"{COMMANDS['convert']}.", allow_abbrev=False)
    experiment_argument(parser)
    parser.add_argument("--to", required=True, metavar="FORMAT", help=f"one of {', '.join(_reader.FORMATS)}")
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="the file to write (otf2: the anchor file NAME.otf2, with NAME.def and NAME/ beside "
        "it); default: a file named after the format in EXP",
    )
    parser.add_argument(
        "--thread", metavar="NAME", help="only the thread of this name (e.g. MainThread, worker-1) or native thread id"
    )
    parser.add_argument(
        "--from",
        dest="start",
        type=_time,
        default=0,
        metavar="TIME",
        help="only what happens from TIME on, since the start of the measurement: 2.5 (seconds), "
        "2500ms, 40us (calls running then are cut there)",
    )
    parser.add_argument(
        "--until",
        dest="stop",
        type=_time,
        default=2**64 - 1,
        metavar="TIME",
        help="only what happens up to TIME (as --from; --to names the format)",
    )
    parser.add_argument(
        "--filter",
        metavar="FILE",
        help="leave out the calls of the regions this Score-P filter file excludes (as `run --filter` "
        "would have; what they called stays, under their callers)",
    )
    namespace = parser.parse_args(arguments)
    namespace.experiment = chosen(namespace.experiment)
    if namespace.to not in _reader.FORMATS:
        guess = closest(namespace.to, _reader.FORMATS)
        raise CommandError(
            f"unknown format {namespace.to!r} (known: {', '.join(_reader.FORMATS)})"
            + (f": did you mean {guess}?" if guess else "")
        )
    if namespace.stop <= namespace.start:
        parser.error("--until must come after --from")
    too_large = json_too_large(namespace.experiment, namespace.to, namespace.thread, namespace.start, namespace.stop)
    if too_large:
        messages.warning(too_large)
    path, result = convert(
        namespace.experiment,
        namespace.to,
        namespace.output,
        thread=namespace.thread,
        start=namespace.start,
        stop=namespace.stop,
        progress=1.0,
        filter=namespace.filter,
    )
    # The events read, not written: a part (--from/--until, --thread, --filter) reads more than it writes.
    messages.say(f"wrote {path} ({result['events']} events read, {format_size(result['bytes'])})")
    tell_problems(namespace.experiment, result["problems"], result["corrupt"])
    return 0


UNITS = {"": 1e9, "s": 1e9, "ms": 1e6, "us": 1e3, "µs": 1e3, "ns": 1}


def _time(text):
    """ns in a time written as seconds (2.5) or with a unit (2500ms, 40us, 100ns)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(s|ms|us|µs|ns)?\s*", text)
    if match is None:
        raise argparse.ArgumentTypeError(f"not a time: {text!r} (examples: 2.5, 2500ms, 40us)")
    return round(float(match.group(1)) * UNITS[match.group(2) or ""])
