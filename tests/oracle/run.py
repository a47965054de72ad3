"""The behaviour oracle: CPython's own regression tests, run plain and under tracetop, compared test by test.

    python tests/oracle/run.py [--instrumenter NAME[,NAME...]] [--jobs N] [MODULE ...]

runs each module with `python -m test` (the Python running this script, which must have tracetop installed)
plain once and under `python -m tracetop run` with each instrumenter, reads the results from libregrtest's
JUnit XML and prints every test whose result differs, and a module whose run ends with another status (a
dangling thread or an altered signal handler is reported by libregrtest as "env changed"). A package such as
test_asyncio is run submodule by submodule (test_asyncio.test_tasks, ...). Each measured experiment must
also read back: `tracetop summary` exits 0.

A difference is looked at twice more before it counts: the tests that differ are run again alone (plain and
measured): one whose result does not come back both times is reported as flaky (timing on a loaded machine),
not as a difference. One that does is run under the reference of its instrumenter, another tool that hooks
the interpreter the same way: cProfile for profile and monitoring (the profile hook; sys.monitoring on 3.12+),
a trace function that does nothing (notrace.py) for trace. A test that fails the same there inspects
profiling or tracing itself (it asks for the hook, the tool id or the events seen while one is set) and is
reported as "fails the same under cProfile" (or "under sys.settrace"); every other one is a difference, and
the exit status is 1."""

import argparse
import concurrent.futures
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import test

MODULES = [
    "test_sys_setprofile",
    "test_sys_settrace",
    "test_generators",
    "test_threading_local",
    "test_exceptions",
    "test_signal",
    "test_subprocess",
    "test_asyncio",
    "test_monitoring",
    "test_threading",
    "test_functools",
    "test_weakref",
    "test_gc",
]
# A run of one module may take this long (test_subprocess under the trace hook on a loaded machine: minutes).
TIMEOUT = 900
# Each instrumenter's reference: a run that hooks the interpreter as it does, without tracetop.
REFERENCE = {"profile": "cProfile", "monitoring": "cProfile", "trace": "sys.settrace"}


def expand(modules):
    """The modules to run: a package (a directory in CPython's test package) as its test_* submodules; a
    module this Python does not have (test_monitoring before 3.12) is left out with a line."""
    found = []
    tests = Path(test.__file__).parent
    for module in modules:
        path = tests / module.replace(".", "/")
        if path.is_dir():
            found += sorted(
                f"{module}.{sub.stem}"
                for sub in path.iterdir()
                if sub.name.startswith("test_") and (sub.suffix == ".py" or sub.is_dir())
            )
        elif path.with_suffix(".py").exists():
            found.append(module)
        else:
            print(f"Python {sys.version.split()[0]}: no {module} here, left out", flush=True)
    return found


def results(junit):
    """{test id: 'ok' | 'failure' | 'error' | 'skipped'} from a JUnit XML file. A failed subtest ("ID (i=1)")
    counts as its test's result, as unittest reports it."""
    outcome = {}
    for case in ElementTree.parse(junit).iter("testcase"):
        name = case.get("name")
        if name is None:  # libregrtest writes an empty element for a test whose subtests failed: read as absent
            continue
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        test = (name if "." in name else f"{case.get('classname')}.{name}").split(" (")[0]
        result = kinds[0] if kinds else "ok"
        if outcome.get(test) in (None, "ok", "skipped"):
            outcome[test] = result
    return outcome


class Run:
    """One `python -m test` of one module: plain, under tracetop with an instrumenter, or under a reference
    (cProfile, or a no-op sys.settrace)."""

    def __init__(self, work, how):
        self.work, self.how = work, how

    def prefix(self, directory):
        if self.how == "plain":
            return []
        if self.how == "cProfile":
            return ["-m", "cProfile", "-o", str(directory / "cprofile.out")]
        if self.how == "sys.settrace":
            return [str(Path(__file__).with_name("notrace.py"))]
        return ["-m", "tracetop", "run", "--output", str(directory / "exp"), f"--instrumenter={self.how}"]

    def __call__(self, module, tests=None):
        """(results, exit status, what went wrong with the experiment or None); tests: only these ids."""
        directory = Path(tempfile.mkdtemp(prefix=f"{module}-{self.how}-", dir=self.work))
        junit, match = directory / "junit.xml", []
        if tests:
            (directory / "match").write_text("".join(t.split(" ")[0] + "\n" for t in tests))
            match = ["--matchfile", str(directory / "match")]
        command = [sys.executable, *self.prefix(directory), "-m", "test", "--junit-xml", str(junit), *match, module]
        try:
            status = subprocess.run(
                command, cwd=directory, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=TIMEOUT
            ).returncode
        except subprocess.TimeoutExpired:
            status = "timed out"
        outcome, problem = results(junit) if junit.exists() else {}, None
        if self.how not in ("plain", *REFERENCE.values()) and not tests:
            summary = subprocess.run(
                [sys.executable, "-m", "tracetop", "summary", str(directory / "exp")],
                cwd=directory,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            if summary.returncode:
                problem = f"tracetop summary exits {summary.returncode}: {summary.stderr.strip()[-300:]}"
        shutil.rmtree(directory, ignore_errors=True)
        return outcome, status, problem


def compare(module, plain, measured, run, label):
    """Lines for the report, and the number of differences that count."""
    (before, status, _), (after, measured_status, problem) = plain, measured
    if not before and not after and status == measured_status == 0:  # test_asyncio.test_windows_events here
        return [f"Python {sys.version.split()[0]} {module}: skipped on this platform, plain and measured"], 0
    if not before:
        return [f"{module}: no results plain (status {status})"], 1
    changed = sorted(t for t in before.keys() | after.keys() if before.get(t) != after.get(t))
    flaky, same_as_reference, reference = [], [], REFERENCE[label]
    if changed:
        # Alone, twice: a difference that is real comes back each time.
        for _ in range(2):
            again, again_measured = run["plain"](module, changed)[0], run[label](module, changed)[0]
            flaky += [t for t in changed if again.get(t) != before.get(t) or again_measured.get(t) != after.get(t)]
            changed = [t for t in changed if t not in flaky]
            if not changed:
                break
    if changed:
        under_reference = run[reference](module, changed)[0]
        same_as_reference = [t for t in changed if under_reference.get(t) == after.get(t)]
        changed = [t for t in changed if t not in same_as_reference]
    lines = [
        f"Python {sys.version.split()[0]} {module}: {len(before)} tests, {len(changed)} differ under "
        f"tracetop --instrumenter={label}"
        + (f", {len(flaky)} flaky" if flaky else "")
        + (f", {len(same_as_reference)} fail the same under {reference}" if same_as_reference else "")
    ]
    for kind, tests in (
        ("differs", changed),
        ("flaky, not seen again alone", flaky),
        (f"fails the same under {reference}", same_as_reference),
    ):
        lines += [
            f"    {t}: plain {before.get(t, 'absent')}, measured {after.get(t, 'absent')} ({kind})" for t in tests
        ]
    differences = len(changed)
    # The status says what the test results may not: libregrtest's "env changed" (a thread left running, a
    # signal handler or a file left behind). Only when the results agree: a changed result changes it anyway.
    if not changed and not flaky and status != measured_status and not same_as_reference:
        lines.append(f"    the run's exit status: plain {status}, measured {measured_status}")
        differences += 1
    if problem:
        lines.append(f"    the experiment: {problem}")
        differences += 1
    return lines, differences


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--instrumenter",
        default="profile",
        help="one or more, comma-separated (profile,trace,monitoring): the plain run is shared",
    )
    parser.add_argument("--jobs", type=int, default=1, help="modules run at once")
    parser.add_argument("modules", nargs="*", default=MODULES)
    options = parser.parse_args()
    # The tests run as from a terminal, with SIGINT's default action: a background job of a shell without job
    # control starts with SIGINT ignored, and then _thread.interrupt_main() does nothing and test_asyncio's
    # test_runners waits for it forever (plain as measured). A child gets the default back at its exec.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    instrumenters = options.instrumenter.split(",")
    modules = expand(options.modules)
    differences = 0
    with tempfile.TemporaryDirectory(prefix="tracetop-oracle-") as directory:
        work = Path(directory)
        run = {how: Run(work, how) for how in ["plain", *REFERENCE.values(), *instrumenters]}

        def one(module):
            start = time.monotonic()
            plain = run["plain"](module)
            report, count = [], 0
            for label in instrumenters:
                lines, n = compare(module, plain, run[label](module), run, label)
                report += lines
                count += n
            return report + [f"    ({time.monotonic() - start:.0f} s)"], count

        with concurrent.futures.ThreadPoolExecutor(options.jobs) as pool:
            for report, count in pool.map(one, modules):
                print("\n".join(report), flush=True)
                differences += count
    print(f"Python {sys.version.split()[0]}: {len(modules)} modules, {differences} differences", flush=True)
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
