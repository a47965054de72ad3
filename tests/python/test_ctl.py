"""`tracetop ctl PID on|off`: the measurement of a running program switched from outside, on all its threads."""
import subprocess
import sys

from helpers import PROGRAMS, assert_complete, enters, environment, tracetop


class Phases:
    """tests/python/programs/switch_phases.py running under `tracetop run --live`, moved on phase by phase."""

    def __init__(self, tmp_path, *options):
        self.process = subprocess.Popen([sys.executable, "-m", "tracetop", "--live", *options, "--output", "exp",
                                         PROGRAMS / "switch_phases.py"], cwd=tmp_path, env=environment(),
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
        self.hooks = {}  # phase -> whether the program saw a hook then
        self.expect(1)

    def expect(self, phase):
        line = self.process.stdout.readline()
        assert line in (f"phase {phase} hooked\n", f"phase {phase} unhooked\n"), line
        self.hooks[phase] = line.endswith(" hooked\n")

    def next(self, phase):
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        self.expect(phase)

    def ctl(self, state, tmp_path):
        completed = tracetop("ctl", str(self.process.pid), state, cwd=tmp_path)
        assert completed.returncode == 0, completed.stderr
        assert completed.stderr == f"tracetop: process {self.process.pid}: measurement {state}\n"

    def end(self):
        self.process.stdin.write("\n")
        _, stderr = self.process.communicate(timeout=60)
        assert self.process.returncode == 0, stderr


def test_off_then_on(tmp_path):
    program = Phases(tmp_path)
    program.ctl("off", tmp_path)
    program.next(2)
    program.next(3)
    program.ctl("on", tmp_path)
    program.next(4)
    program.end()
    # Off, the hook is taken away (the program runs at its own speed); on, it is back.
    assert (program.hooks[1], program.hooks[3], program.hooks[4]) == (True, False, True)
    experiment = tmp_path / "exp"
    for worker in ("worker-0", "worker-1"):
        recorded = enters(experiment, worker)
        assert recorded["__main__:step_1"] > 0 and recorded["__main__:step_4"] > 0, recorded
        assert recorded["__main__:step_2"] == 0 and recorded["builtins:sum"] > 0
    # Started while the measurement was off; measured once it was on again.
    assert enters(experiment, "late")["__main__:late_step"] > 0
    assert_complete(experiment)


def test_noinstrumenter_idles_until_switched_on(tmp_path):
    program = Phases(tmp_path, "--noinstrumenter")
    program.next(2)
    program.ctl("on", tmp_path)
    program.next(3)
    program.ctl("off", tmp_path)
    program.next(4)
    program.end()
    assert (program.hooks[1], program.hooks[2], program.hooks[3]) == (False, False, True)
    recorded = enters(tmp_path / "exp")
    assert recorded["__main__:step_1"] == recorded["__main__:step_4"] == 0
    assert recorded["__main__:step_3"] > 0
    assert_complete(tmp_path / "exp")


def test_no_such_process(tmp_path):
    completed = tracetop("ctl", "999999999", "off", cwd=tmp_path)
    assert completed.returncode == 2
    assert completed.stderr == "tracetop: error: no live process 999999999 (is it measured with --live?)\n"


def test_bad_arguments(tmp_path):
    for arguments in (["ctl"], ["ctl", "12"], ["ctl", "x", "on"], ["ctl", "12", "maybe"],
                      ["ctl", "12", "on", "--timeout", "0"]):
        completed = tracetop(*arguments, cwd=tmp_path)
        assert completed.returncode == 2 and "Traceback" not in completed.stderr
