"""Runs a script under `tracetop run --live` the way live.py measures it:

    python -m tracetop --live [options] bench/driver.py attach SCRIPT [ARGS...]
    python -m tracetop --live [options] bench/driver.py off SCRIPT [ARGS...]

attach: waits a second first, so that a `tracetop top` started beside it has attached before the
script's first event (it looks for new programs every 10 ms). off: has `tracetop ctl` switch this
process's measurement off, and waits for it, first. Then runs SCRIPT as `python SCRIPT ARGS` would."""

import os
import runpy
import subprocess
import sys
import time

mode, script, *arguments = sys.argv[1:]
if mode == "attach":
    time.sleep(1)
else:
    # Under an instruction counter this program runs some fifty times slower: give it time to answer.
    subprocess.run([sys.executable, "-m", "tracetop", "ctl", str(os.getpid()), "off", "--timeout", "120"], check=True)
sys.argv = [script, *arguments]
sys.path[0] = os.path.dirname(os.path.abspath(script))
runpy.run_path(script, run_name="__main__")
