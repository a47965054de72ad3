"""Prints whether libpython's own calls of _Py_NewReference and _Py_Dealloc go to tracetop (its wedges,
Python 3.11 and 3.12): before counting objects, while counting (tracetop.objects.enable()) and after.

Read from the process itself: each relocation of libpython's dynamic section that binds one of the two
(ELF .rela.plt and .rela.dyn) names a slot of its offset table; a slot is wedged when it holds an address in
tracetop's extension module."""
import ctypes
import struct

import tracetop
from tracetop import _tracetop

NAMES = (b"_Py_NewReference", b"_Py_Dealloc")


def mappings(marker):
    """(path, [(start, end)], base) of the first file mapped whose path contains `marker`."""
    path, ranges, base = None, [], None
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) < 6 or marker not in fields[5] or (path and fields[5] != path):
                continue
            path = fields[5]
            start, end = (int(n, 16) for n in fields[0].split("-"))
            ranges.append((start, end))
            if int(fields[2], 16) == 0 and base is None:
                base = start
    return path, ranges, base


def slots(path):
    """The offsets of the slots that bind one of NAMES: {name: [offset]}."""
    data = open(path, "rb").read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = sections[shstrndx][4]

    def name_of(section):
        start = names + section[0]
        return data[start:data.index(b"\0", start)]

    by_name = {name_of(s): s for s in sections}
    dynsym, dynstr = by_name[b".dynsym"], by_name[b".dynstr"]
    found = {name: [] for name in NAMES}
    for table in (b".rela.plt", b".rela.dyn"):
        section = by_name.get(table)
        for at in range(section[4], section[4] + section[5], 24) if section else ():
            offset, info, _ = struct.unpack_from("<QQq", data, at)
            if info & 0xFFFFFFFF not in (6, 7):  # R_X86_64_GLOB_DAT, R_X86_64_JUMP_SLOT
                continue
            st_name, = struct.unpack_from("<I", data, dynsym[4] + (info >> 32) * 24)
            symbol = data[dynstr[4] + st_name:data.index(b"\0", dynstr[4] + st_name)]
            if symbol in found:
                found[symbol].append(offset)
    return found


LIBPYTHON, _, BASE = mappings("libpython")
OURS = mappings(_tracetop.__file__)[1]
SLOTS = slots(LIBPYTHON)
assert all(SLOTS.values()), SLOTS


def wedged():
    """Per name, whether every slot goes to tracetop (True), none (False) or some (None)."""
    said = []
    for name in NAMES:
        ours = [any(start <= ctypes.c_void_p.from_address(BASE + offset).value < end for start, end in OURS)
                for offset in SLOTS[name]]
        said.append(True if all(ours) else False if not any(ours) else None)
    return said


print("before", wedged())
tracetop.objects.enable()
print("counting", wedged())
tracetop.objects.disable()
print("after", wedged())
