"""The harness's C profile hooks (hook.c) and the runner that sets one around a script.

    python bench/hook.py floor SCRIPT [ARGS...]   # run SCRIPT under the empty C hook
    python bench/hook.py count SCRIPT [ARGS...]   # ... under the counting one; prints
                                                  # "events N" to stderr at the end

The hook is set on every thread before SCRIPT starts. build() compiles hook.c for the running
Python into bench/.cache; the runner expects it built.
"""
import os
import runpy
import shlex
import subprocess
import sys
import sysconfig
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
SOURCE = HERE / "hook.c"


def build():
    """Compiles hook.c against the running Python's headers, unless the cached build is current."""
    target = CACHE / ("_benchhook" + sysconfig.get_config_var("EXT_SUFFIX"))
    if target.exists() and target.stat().st_mtime >= SOURCE.stat().st_mtime:
        return
    CACHE.mkdir(exist_ok=True)
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
    include = sysconfig.get_paths()["include"]
    subprocess.run([*cc, "-shared", "-fPIC", "-O2", "-Wall", "-I", include, str(SOURCE), "-o", str(target)], check=True)


def main():
    mode, script, *args = sys.argv[1:]
    sys.path[0] = str(CACHE)
    import _benchhook

    # From here on, as `python SCRIPT ARGS...` would have it.
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    sys.argv = [script, *args]
    threading.setprofile(_benchhook.adopt)
    _benchhook.install(mode)
    runpy.run_path(script, run_name="__main__")
    if mode == "count":
        print("events", _benchhook.count(), file=sys.stderr)


if __name__ == "__main__":
    main()
