"""tracetop in Jupyter: the magics of PRODUCT.md (`%load_ext tracetop` in any IPython kernel), and the
kernel "tracetop" that has them loaded (`tracetop jupyter install`).

Measured cells run in the kernel's own process (tracetop.jupyter.cell): nothing is pickled, every object
lives on between measured and unmeasured cells. In them `import scorep` works (tracetop.compat) unless
the real scorep package is installed."""

from tracetop import compat


def load_ipython_extension(ipython):
    from tracetop.jupyter.magics import Notebook

    compat.install()
    Notebook(ipython).register()
