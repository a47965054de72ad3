"""`python -m tracetop`: the same program as the `tracetop` command."""

import os
import sys

from tracetop.cli import main

if __name__ == "__main__":
    sys.exit(main(prog=f"{os.path.basename(sys.executable)} -m tracetop"))
