"""Byte sizes as people write them (64M, 2g, 16000k, 1048576) and as tracetop shows them (1.2 MiB)."""

# Sizes beyond this are mistakes: the C side counts bytes in 64 bits, and no machine has a PiB of memory.
MAX_SIZE = 1 << 50
_MULTIPLIERS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text):
    """Bytes in `text`: a number with an optional binary unit (k, M, G, T; kB, MiB ... also read), as Score-P
    reads SCOREP_TOTAL_MEMORY."""
    # Read by hand, as the pattern number, spaces, unit, "iB" or "B": a regular expression would import re
    # (and enum), most of a measured process's start-up.
    word = text.strip().lower()
    word = word[:-2] if word.endswith("ib") else word[:-1] if word.endswith("b") else word
    unit = word[-1:] if word[-1:] in ("k", "m", "g", "t") else ""
    number = word[: len(word) - len(unit)].rstrip()
    whole, point, fraction = number.partition(".")
    if not (whole.isdecimal() and (not point or fraction.isdecimal())):
        raise ValueError(f"invalid size {text!r} (examples: 64M, 2g, 1024k, 1048576)")
    size = float(number) * _MULTIPLIERS[unit]
    if size >= MAX_SIZE:
        raise ValueError(f"size too large: {text!r} (at most {format_size(MAX_SIZE - 1)})")
    return int(size)


def format_size(count):
    """`count` bytes for people: '512 bytes', '1.2 MiB'."""
    if count < 1024:
        return f"{count} bytes"
    value, unit = count / 1024, "KiB"
    for larger in ("MiB", "GiB", "TiB"):
        if value < 1024:
            break
        value, unit = value / 1024, larger
    return f"{value:.1f} {unit}"
