"""The Jupyter kernel "tracetop": IPython's kernel (ipykernel) with tracetop's magics loaded.
Jupyter starts it as `python -m tracetop.jupyter.kernel -f CONNECTION_FILE` (see `tracetop jupyter install`)."""

import tracetop
from ipykernel.ipkernel import IPythonKernel
from ipykernel.kernelapp import IPKernelApp


class TracetopKernel(IPythonKernel):
    implementation = "tracetop"
    implementation_version = tracetop.__version__
    banner = (
        f"tracetop {tracetop.__version__} kernel: IPython with tracetop's magics. %%trace measures a "
        "cell (alias %%execute_with_scorep); %lsmagic lists the others."
    )

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.shell.extension_manager.load_extension("tracetop")


if __name__ == "__main__":
    IPKernelApp.launch_instance(kernel_class=TracetopKernel)
