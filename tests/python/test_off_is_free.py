"""Off is free: switched off (the instrumenter, recording), tracetop's hook leaves every thread and comes back
when switched on, while the calls running across a switch still end where they end."""

import pytest

from helpers import INSTRUMENTERS, PROGRAMS, assert_complete, enters, streams, tracetop


@pytest.mark.parametrize("instrumenter", INSTRUMENTERS)
def test_off_takes_the_hook_away_from_every_thread(instrumenter, tmp_path):
    completed = tracetop(
        "--output",
        "exp",
        "--noinstrumenter",
        f"--instrumenter={instrumenter}",
        PROGRAMS / "off_is_free.py",
        cwd=tmp_path,
    )
    assert completed.returncode == 0, completed.stderr
    seen = dict(line.split(" (") for line in completed.stdout.splitlines())
    assert seen["start"] == "False, False, False)"  # as a program without tracetop sees it
    for state in ("off", "recording off", "nested off", "still off", "end"):
        assert seen[state] == seen["start"], state
    assert seen["on"] != seen["start"] and seen["on again"] == seen["on"]

    experiment = tmp_path / "exp"
    main = enters(experiment, "MainThread")
    assert (main["__main__:f"], main["__main__:g"], main["user:kept"], main["user:inside"]) == (3, 1, 1, 1)
    (calls,) = (
        [event[::2] for event in events if event[0] in ("enter", "leave")]
        for _, thread, events, _, _ in streams(experiment)
        if thread["name"] == "MainThread"
    )
    # g switched off and on again inside: the f() it called then is inside it, and it ends after that f().
    at = calls.index(("enter", "__main__:g"))
    assert calls[at + 1 : at + 4] == [("enter", "__main__:f"), ("leave", "__main__:f"), ("leave", "__main__:g")]
    worker = [thread["name"] for _, thread, _, _, _ in streams(experiment) if thread["name"] != "MainThread"]
    assert len(worker) == 1 and enters(experiment, worker[0])["__main__:f"] >= 2
    assert_complete(experiment)
