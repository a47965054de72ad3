"""The program's own profile and trace functions beside tracetop's hook: each gets exactly the events it gets
without tracetop, sys.getprofile and sys.gettrace return what the program set, and tracetop records every
call all the while; a thread's start never fails for the hook's sake."""

import sys

import pytest

from helpers import INSTRUMENTERS, PROGRAMS, assert_complete, enters, program_stderr, python, tracetop

# Every hook that can record next to the program's functions: on 3.12+ the profile hook itself is chosen
# only with a filter (else `profile` records through sys.monitoring), so a filter that excludes nothing of
# the program's picks it.
HOOKS = [(name, None) for name in INSTRUMENTERS] + (
    [("profile", "SCOREP_REGION_NAMES_BEGIN\n  EXCLUDE nothing:here\nSCOREP_REGION_NAMES_END\n")]
    if sys.version_info >= (3, 12)
    else []
)


def measure(tmp_path, program, instrumenter, filter_text):
    options = [f"--instrumenter={instrumenter}"]
    if filter_text:
        (tmp_path / "nothing.filter").write_text(filter_text)
        options += ["--filter", "nothing.filter"]
    completed = tracetop("run", "--output", "exp", *options, program, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    return completed


@pytest.mark.parametrize("instrumenter, filter_text", HOOKS)
def test_own_functions_and_tracetop_both_record(tmp_path, instrumenter, filter_text):
    plain = python(PROGRAMS / "own_hooks.py", cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    calls = int(plain.stdout.split("work called ")[1].split()[0])
    assert "('call', 'work')" in plain.stdout and "('line', 'work', " in plain.stdout
    traced = measure(tmp_path, PROGRAMS / "own_hooks.py", instrumenter, filter_text)
    assert program_stderr(traced.stderr) == ""
    assert traced.stdout.splitlines() == plain.stdout.splitlines()
    assert_complete(tmp_path / "exp")
    # The call whose "call" event the program's function failed at ran no line of its body. The profile and
    # trace hooks have recorded it before they call that function; sys.monitoring calls the program's
    # function (a legacy profile function, tool 6) before tracetop's callbacks (tool 3 or 4), and leaves
    # them out when it fails.
    monitoring = instrumenter == "monitoring" or (
        instrumenter == "profile" and not filter_text and sys.version_info >= (3, 12)
    )
    assert enters(tmp_path / "exp")["__main__:work"] == calls + (not monitoring)
    for worker in ("worker0", "worker1", "worker2"):
        assert enters(tmp_path / "exp", worker)["__main__:work"] == 9


# Threads start while an audit hook of Python code runs, which lets the GIL go: on 3.11 a setter of the
# profile or trace function called from a thread's start then fails in another thread that sets one
# meanwhile ("Cannot install a profile function while another profile function is being installed").
STARTING_THREADS = """\
import sys, threading
sys.setswitchinterval(1e-6)
sys.addaudithook(lambda *args: [x for x in range(200)])
failures = []
sys.unraisablehook = lambda u: failures.append(f"{u.exc_type.__name__}: {u.exc_value}")
threading.excepthook = lambda a: failures.append(repr(a.exc_value))
def work(i):
    return sum(range(i % 50))
for _ in range(5):
    threads = [threading.Thread(target=work, args=(i,)) for i in range(200)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
print("threads that failed:", len(failures), sorted(set(failures)))
"""


@pytest.mark.parametrize("instrumenter, filter_text", HOOKS)
def test_threads_start_under_an_audit_hook(tmp_path, instrumenter, filter_text):
    (tmp_path / "starting.py").write_text(STARTING_THREADS)
    plain = python("starting.py", cwd=tmp_path)
    assert plain.returncode == 0 and plain.stdout == "threads that failed: 0 []\n", plain.stderr
    traced = measure(tmp_path, "starting.py", instrumenter, filter_text)
    assert program_stderr(traced.stderr) == ""
    assert traced.stdout == plain.stdout
    assert enters(tmp_path / "exp")["__main__:work"] == 1000
