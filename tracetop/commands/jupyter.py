"""`tracetop jupyter install [--user | --sys-prefix | --prefix DIR]`: registers the Jupyter kernel "tracetop"
(tracetop.jupyter.kernel), run by this Python."""

import json
import os
import sys
import tempfile

from tracetop import messages
from tracetop.commands import COMMANDS
from tracetop.messages import CommandError
from tracetop.suggest import ArgumentParser

KERNEL_NAME = "tracetop"


def main(arguments, prog):
    parser = ArgumentParser(prog=prog, description=f"{COMMANDS['jupyter']}.", allow_abbrev=False)
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    install = actions.add_parser(
        "install",
        help='register the kernel "tracetop" with Jupyter',
        description='Registers the kernel "tracetop": IPython with tracetop\'s magics, '
        "run by this Python. Without an option, for every user of the "
        "system.",
    )
    where = install.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="for the current user only")
    where.add_argument("--sys-prefix", action="store_true", help=f"in this Python's prefix ({sys.prefix})")
    where.add_argument("--prefix", metavar="DIR", help="under DIR/share/jupyter/kernels")
    install.add_argument(
        "--display-name",
        default=f"Python {sys.version_info[0]} (tracetop)",
        help="the name Jupyter shows (default: %(default)s)",
    )
    namespace = parser.parse_args(arguments)
    return _install(namespace)


def _install(namespace):
    try:
        import ipykernel  # noqa: F401 -- the kernel is built on it: say so now rather than when it starts
        from jupyter_client.kernelspec import KernelSpecManager
    except ImportError as missing:
        raise CommandError(f"the Jupyter kernel needs {missing.name}: pip install ipykernel") from None
    prefix = sys.prefix if namespace.sys_prefix else namespace.prefix
    spec = {
        "argv": [sys.executable, "-m", "tracetop.jupyter.kernel", "-f", "{connection_file}"],
        "display_name": namespace.display_name,
        "language": "python",
        "metadata": {"debugger": False},
    }
    with tempfile.TemporaryDirectory() as directory:
        with open(os.path.join(directory, "kernel.json"), "w", encoding="utf-8") as file:
            json.dump(spec, file, indent=1)
        try:
            installed = KernelSpecManager().install_kernel_spec(
                directory, KERNEL_NAME, user=namespace.user, prefix=prefix
            )
        except OSError as problem:
            hint = " (try --user or --sys-prefix)" if isinstance(problem, PermissionError) else ""
            raise CommandError(f"cannot install the kernel: {problem.strerror}: {problem.filename}{hint}") from None
    messages.say(f"installed the Jupyter kernel {KERNEL_NAME!r} in {installed}")
    return 0
