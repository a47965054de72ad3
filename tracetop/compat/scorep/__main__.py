"""`python -m scorep [Score-P binding flags] app.py`, a Score-P job script's line: tracetop measures the program,
as `python -m tracetop` does with the same flags."""

import os
import sys

from tracetop.cli import main

if __name__ == "__main__":
    sys.exit(main(prog=f"{os.path.basename(sys.executable)} -m scorep"))
