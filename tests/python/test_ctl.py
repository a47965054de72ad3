"""`tracetop ctl PID on|off`: the measurement of a running program switched from outside, on all its threads."""

from helpers import assert_complete, enters, tracetop
from live_helpers import Phases


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
    for arguments in (
        ["ctl"],
        ["ctl", "12"],
        ["ctl", "x", "on"],
        ["ctl", "12", "maybe"],
        ["ctl", "12", "on", "--timeout", "0"],
    ):
        completed = tracetop(*arguments, cwd=tmp_path)
        assert completed.returncode == 2 and "Traceback" not in completed.stderr
