"""The API outside a measurement: every call is a cheap no-op, so annotated code runs unchanged."""

import pytest
import tracetop

from helpers import _tracetop


@pytest.fixture(autouse=True)
def unmeasured():
    assert not _tracetop.active()


def test_every_call_does_nothing():
    with tracetop.region("x"), tracetop.region("x"):
        pass
    tracetop.region_begin("y")
    tracetop.region_end("y")
    tracetop.parameter_int("n", -1)
    tracetop.parameter_uint("u", 1)
    tracetop.parameter_string("s", "v")
    tracetop.counter("c", 1.5)
    tracetop.counter("c", 2)
    tracetop.mark("m")
    tracetop.disable_recording()
    tracetop.enable_recording()
    tracetop.instrumenter.disable()
    tracetop.instrumenter.enable()
    with tracetop.instrumenter.disable(), tracetop.instrumenter.enable():
        pass
    assert not _tracetop.active()


def test_decorated_functions_behave_as_before():
    @tracetop.region()
    def add(a, b=2):
        """Adds."""
        return a + b

    @tracetop.region("named")
    def fail():
        raise ValueError("no")

    @tracetop.instrumenter.disable()
    def quiet(x):
        return x * 2

    assert add(1) == 3 and add(1, b=5) == 6
    assert (add.__name__, add.__doc__, add.__wrapped__.__name__) == ("add", "Adds.", "add")
    with pytest.raises(ValueError, match="no"):
        fail()
    assert quiet(4) == 8 and quiet.__name__ == "quiet"


def test_a_region_in_a_with_statement_needs_a_name():
    # Python before 3.11 says AttributeError for an object that is no context manager.
    with pytest.raises((TypeError, AttributeError)), tracetop.region():
        pass


def test_version():
    assert tracetop.__version__
