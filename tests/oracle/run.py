"""The behaviour oracle: CPython's own regression tests, run plain and under tracetop, compared test by test.

    python tests/oracle/run.py [--instrumenter NAME] [--profiler] [MODULE ...]

runs each module with `python -m test` (the Python running this script, which must have tracetop installed)
plain and under `python -m tracetop run`, reads the results from libregrtest's JUnit XML and prints every test
whose result differs. --profiler compares under cProfile instead (for the tests that inspect profiling
itself: they fail the same there). Exit status 1 when a result differs."""

import argparse
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

MODULES = ["test_sys_setprofile", "test_sys_settrace", "test_generators", "test_threading_local",
           "test_exceptions", "test_signal"]


def results(junit):
    """{test id: 'ok' | 'failure' | 'error' | 'skipped'} from a JUnit XML file."""
    outcome = {}
    for case in ElementTree.parse(junit).iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        outcome[f"{case.get('classname')}.{case.get('name')}"] = kinds[0] if kinds else "ok"
    return outcome


def run(module, prefix, work):
    junit = work / f"{module}-{'plain' if not prefix else prefix[2]}.xml"
    subprocess.run([sys.executable, *prefix, "-m", "test", "--junit-xml", str(junit), module], cwd=work,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=900)
    return results(junit) if junit.exists() else {}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instrumenter", default="profile")
    parser.add_argument("--profiler", action="store_true", help="compare under cProfile instead of tracetop")
    parser.add_argument("modules", nargs="*", default=MODULES)
    options = parser.parse_args()
    differences = 0
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        under = ["-m", "cProfile", "-o", str(work / "cprofile.out")] if options.profiler else \
            ["-m", "tracetop", "run", "--output", str(work / "exp"), f"--instrumenter={options.instrumenter}"]
        label = "cProfile" if options.profiler else f"tracetop --instrumenter={options.instrumenter}"
        for module in options.modules:
            plain, measured = run(module, [], work), run(module, under, work)
            if not plain:
                print(f"{module}: no results plain")
                differences += 1
                continue
            changed = sorted(test for test in plain.keys() | measured.keys() if plain.get(test) != measured.get(test))
            print(f"Python {sys.version.split()[0]} {module}: {len(plain)} tests, {len(changed)} differ under {label}")
            for test in changed:
                print(f"    {test}: plain {plain.get(test, 'absent')}, measured {measured.get(test, 'absent')}")
            differences += len(changed)
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
