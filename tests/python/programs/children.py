"""Runs seen.py in a child process in each way a program starts Python: as `-c` code, as `-m seen`, as a
script; prints what each saw, and what the children wrote on stderr."""
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "seen.py")) as file:
    code = file.read()
for command in (["-c", code, "a"], ["-m", "seen", "b"], [os.path.join(here, "seen.py"), "c"]):
    child = subprocess.run([sys.executable, *command], cwd=here, capture_output=True, text=True)
    print(child.returncode, child.stdout, end="")
    sys.stderr.write(child.stderr)
