"""What measuring a Jupyter cell costs: the fixed cost of a measured cell (%%trace) over a plain one, and
tracetop's in-process measurement against the Score-P kernel's approach on a notebook holding 100 MB.

Everything runs in the real kernel "tracetop" (installed into a temporary prefix), driven by
jupyter_client as a notebook front end drives it. Times are wall-clock medians.

- plain / measured: the round trip of a trivial cell (`x = 1`), from the request to the reply, and the
  time the kernel spends in it (IPython's own execution, measured in the kernel around run_cell).
- The Score-P kernel runs each measured cell in a subprocess and carries the notebook's state across
  with pickle/dill both ways. It is emulated here without Score-P itself (which would only add its own
  start-up): the state is pickled to a file, a fresh Python loads it, runs the cell and pickles the state
  back, and the kernel loads that. Generators, open files and sockets cannot cross at all.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from jupyter_client.manager import start_new_kernel

# A notebook's data: 1,000 arrays of 100 KiB.
MAKE_DATA = "data = [bytes(range(256)) * 400 for _ in range(1000)]\nprint(sum(map(len, data)) >> 20, 'MiB')"

# The Score-P kernel's way, emulated in the kernel: state -> pickle -> subprocess runs the cell -> pickle -> state.
SCOREP_WAY = r"""
import builtins, pickle, subprocess, sys, tempfile, types
def _scorep_way(cell):
    names = {name: value for name, value in globals().items()
             if not name.startswith("_") and not isinstance(value, types.ModuleType)
             and name not in ("In", "Out", "exit", "quit", "get_ipython") and not hasattr(builtins, name)}
    with tempfile.TemporaryDirectory() as directory:
        with open(f"{directory}/state.pkl", "wb") as file:
            pickle.dump(names, file, protocol=pickle.HIGHEST_PROTOCOL)
        child = ("import pickle, sys\n"
                 "state = pickle.load(open(sys.argv[1] + '/state.pkl', 'rb'))\n"
                 "exec(sys.argv[2], state)\n"
                 "state.pop('__builtins__', None)\n"
                 "pickle.dump(state, open(sys.argv[1] + '/back.pkl', 'wb'), protocol=pickle.HIGHEST_PROTOCOL)\n")
        subprocess.run([sys.executable, "-c", child, directory, cell], check=True)
        with open(f"{directory}/back.pkl", "rb") as file:
            globals().update(pickle.load(file))
"""

IN_KERNEL = (
    "import time as _t\n_started = _t.perf_counter()\nget_ipython().run_cell({cell!r}, store_history=False)\n"
    "print('elapsed', _t.perf_counter() - _started)"
)


class Kernel:
    def __init__(self, cwd):
        self.manager, self.client = start_new_kernel(kernel_name="tracetop", cwd=cwd, startup_timeout=120)

    def run(self, code):
        """(seconds for the round trip, stdout)."""
        out = []

        def take(message):
            if message["msg_type"] == "stream" and message["content"]["name"] == "stdout":
                out.append(message["content"]["text"])
            elif message["msg_type"] == "error":
                raise RuntimeError(message["content"]["evalue"])

        started = time.perf_counter()
        reply = self.client.execute_interactive(code, output_hook=take, timeout=600)
        elapsed = time.perf_counter() - started
        if reply["content"]["status"] != "ok":
            raise RuntimeError(f"cell failed: {code!r}: {reply['content']}")
        return elapsed, "".join(out)

    def in_kernel(self, cell):
        """Seconds the kernel spends running `cell` (IPython's run_cell, the magic included)."""
        _, out = self.run(IN_KERNEL.format(cell=cell))
        return float(out.rsplit("elapsed ", 1)[1])

    def close(self):
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


def median_ms(values):
    return f"{1e3 * statistics.median(values):.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="cells of each kind (default: %(default)s)")
    parser.add_argument("--big-runs", type=int, default=5, help="cells with 100 MB of data (default: %(default)s)")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        prefix = os.path.join(directory, "prefix")
        subprocess.run(
            [sys.executable, "-m", "tracetop", "jupyter", "install", "--prefix", prefix],
            check=True,
            capture_output=True,
            cwd=directory,
        )  # not the source tree, which would shadow tracetop
        os.environ["JUPYTER_PATH"] = os.path.join(prefix, "share", "jupyter")
        notebook = os.path.join(directory, "notebook")
        os.mkdir(notebook)
        kernel = Kernel(notebook)
        try:
            report(kernel, arguments)
        finally:
            kernel.close()


def report(kernel, arguments):
    plain, measured = "x = 1", "%%trace\nx = 1"
    for _ in range(3):  # warm up: imports, first experiment
        kernel.run(plain)
        kernel.run(measured)
    trips = {plain: [], measured: []}
    inside = {plain: [], measured: []}
    for _ in range(arguments.runs):
        for cell in (plain, measured):
            trips[cell].append(kernel.run(cell)[0])
            inside[cell].append(kernel.in_kernel(cell))
    fixed_trip = statistics.median(trips[measured]) - statistics.median(trips[plain])
    fixed_inside = statistics.median(inside[measured]) - statistics.median(inside[plain])
    print(f"## Fixed cost of a measured cell ({arguments.runs} cells each, medians)\n")
    print("| cell | round trip (ms) | in the kernel (ms) |\n|---|---|---|")
    print(f"| plain `x = 1` | {median_ms(trips[plain])} | {median_ms(inside[plain])} |")
    print(f"| measured `%%trace` `x = 1` | {median_ms(trips[measured])} | {median_ms(inside[measured])} |")
    print(f"| **fixed cost** | **{1e3 * fixed_trip:.2f}** | **{1e3 * fixed_inside:.2f}** |\n")

    _, made = kernel.run(MAKE_DATA)
    kernel.run(SCOREP_WAY)
    cell = "total = sum(map(len, data))"
    tracetop_times = [kernel.run("%%trace\n" + cell)[0] for _ in range(arguments.big_runs)]
    plain_times = [kernel.run(cell)[0] for _ in range(arguments.big_runs)]
    scorep_times = [kernel.run(f"_scorep_way({cell!r});")[0] for _ in range(arguments.big_runs)]
    print(f"## A measured cell in a notebook holding {made.strip()} ({arguments.big_runs} cells, medians)\n")
    print("| approach | round trip (ms) |\n|---|---|")
    print(f"| plain cell, not measured | {median_ms(plain_times)} |")
    print(f"| tracetop: `%%trace`, in the kernel's process | {median_ms(tracetop_times)} |")
    print(
        f"| Score-P kernel's approach: pickle, subprocess, pickle back (emulated, without Score-P) | "
        f"{median_ms(scorep_times)} |"
    )
    ratio = statistics.median(scorep_times) / statistics.median(tracetop_times)
    print(
        f"\nThe Score-P kernel's approach takes {ratio:.0f}x as long per measured cell here, and cannot "
        "carry generators, open files or sockets at all."
    )


if __name__ == "__main__":
    main()
