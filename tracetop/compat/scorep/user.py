"""scorep.user: user regions, parameters and the recording switch, as the Score-P Python bindings name them.

A user region named "x" is recorded as `user:x`, as tracetop.region("x") is. region_begin and region_end
are tracetop's C functions themselves: a Python function in between would split the region where it
returns (see tracetop.regions)."""

import tracetop

region_begin = tracetop.region_begin
region_end = tracetop.region_end
enable_recording = tracetop.enable_recording
disable_recording = tracetop.disable_recording
parameter_int = tracetop.parameter_int
parameter_uint = tracetop.parameter_uint
parameter_string = tracetop.parameter_string


def region(region_name="", module_name="", file_name="", line_number=0):
    """A region as context manager or decorator: `user:<region_name>`; without a name, as a decorator,
    the function's `module:qualname`. The other arguments are Score-P's ways to name a region and are
    not needed: tracetop takes module, file and line from the function."""
    return tracetop.region(region_name or None)
