"""A fuzz seed's program (seeds.py): 12,000 calls at one depth, more than the 4 blocks of spans below which a depth
keeps no coarse levels (src/index/lod_build.c), in a view.idx of a few KiB."""

for i in range(12000):
    abs(i)
