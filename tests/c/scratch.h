/* scratch.h -- a C test's scratch directory (made with mkdtemp), removed at
 * the end with everything the test wrote in it. nftw needs _GNU_SOURCE (or
 * _XOPEN_SOURCE) defined before the first system header: a test defines it
 * first. */
#ifndef TRACETOP_TEST_SCRATCH_H
#define TRACETOP_TEST_SCRATCH_H

#include <ftw.h>
#include <stdio.h>

static int scratch_remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static inline void scratch_remove(const char *root) { nftw(root, scratch_remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

#endif
