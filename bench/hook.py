"""The harness's C profile hooks (hook.c) and the runner that sets one around a script.

    python bench/hook.py floor SCRIPT [ARGS...]   # run SCRIPT under the empty C hook
    python bench/hook.py count SCRIPT [ARGS...]   # ... under the counting one; prints
                                                  # "events N" to stderr at the end

The hook is set on every thread before SCRIPT starts. build() compiles hook.c for the running
Python into bench/.cache; the runner expects it built.
"""

import os
import sys
import threading
import types

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join(HERE, ".cache")
SOURCE = os.path.join(HERE, "hook.c")


def build():
    """Compiles hook.c against the running Python's headers, unless the cached build is current."""
    # Imported here, not by the runner (nor pathlib): a module the runner has imported is one the
    # program's own import finds made, whose import's events would go uncounted (asyncio imports
    # subprocess), while tracetop records them.
    import shlex
    import subprocess
    import sysconfig

    target = os.path.join(CACHE, "_benchhook" + sysconfig.get_config_var("EXT_SUFFIX"))
    if os.path.exists(target) and os.stat(target).st_mtime >= os.stat(SOURCE).st_mtime:
        return
    os.makedirs(CACHE, exist_ok=True)
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
    include = sysconfig.get_paths()["include"]
    subprocess.run([*cc, "-shared", "-fPIC", "-O2", "-Wall", "-I", include, SOURCE, "-o", target], check=True)


def main():
    mode, script, *args = sys.argv[1:]
    sys.path[0] = CACHE
    import _benchhook

    # From here on, as `python SCRIPT ARGS...` would have it: the script compiled first, so that
    # the hook sees the program's own events only (as tracetop records them), not the reading and
    # compiling of its file, as runpy.run_path's would be.
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    sys.argv = [script, *args]
    with open(script, "rb") as f:
        code = compile(f.read(), script, "exec")
    main = types.ModuleType("__main__")
    main.__file__ = script
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main
    threading.setprofile(_benchhook.adopt)
    _benchhook.install(mode)
    exec(code, main.__dict__)
    if mode == "count":
        print("events", _benchhook.count(), file=sys.stderr)


if __name__ == "__main__":
    main()
