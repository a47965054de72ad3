"""Runs seen.py in a child process in each way a program starts Python: as `-c` code, as `-m seen`, as a
script, and as a script with a preexec_fn (which subprocess runs in a forked child before it execs); prints what
each saw, and what the children wrote on stderr."""
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "seen.py")) as file:
    code = file.read()
for command, preexec_fn in ((["-c", code, "a"], None), (["-m", "seen", "b"], None),
                            ([os.path.join(here, "seen.py"), "c"], None), ([os.path.join(here, "seen.py"), "d"], os.getpid)):
    child = subprocess.run([sys.executable, *command], cwd=here, capture_output=True, text=True, preexec_fn=preexec_fn)
    print(child.returncode, child.stdout, end="")
    sys.stderr.write(child.stderr)
