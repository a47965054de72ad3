import pytest
from tracetop.sizes import format_size, parse_size


@pytest.mark.parametrize(
    "text, size",
    [
        ("1048576", 1 << 20),
        ("64M", 64 << 20),
        ("2g", 2 << 30),
        ("1024k", 1 << 20),
        ("16000k", 16000 << 10),  # Score-P's SCOREP_TOTAL_MEMORY syntax
        ("1.5G", 3 << 29),
        ("64MB", 64 << 20),
        ("64 MiB", 64 << 20),
        (" 1t ", 1 << 40),
    ],
)
def test_parse_size(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "M", "-1M", "64X", "1e6", "64 M B", "sixty"])
def test_parse_size_rejects(text):
    with pytest.raises(ValueError, match="invalid size"):
        parse_size(text)


@pytest.mark.parametrize(
    "count, shown",
    [
        (0, "0 bytes"),
        (1023, "1023 bytes"),
        (1024, "1.0 KiB"),
        (int(1.25 * (1 << 20)), "1.2 MiB"),
        (3 << 30, "3.0 GiB"),
        (5000 << 40, "5000.0 TiB"),
    ],
)
def test_format_size(count, shown):
    assert format_size(count) == shown
