/* file.h -- opening a file of an experiment for reading.
 *
 * An experiment directory is input: anything may lie where a trace file is
 * expected. A FIFO would block open() and read() forever, a device would be
 * read as data; only regular files are opened, and without waiting.
 */
#ifndef TRACETOP_FILE_H
#define TRACETOP_FILE_H

#include <sys/stat.h>

/* A descriptor of `path` opened read-only (close-on-exec) and its stat;
 * -1 with errno set when it cannot be opened or is not a regular file
 * (EINVAL then). */
int tt_open_regular(const char *path, struct stat *st);

#endif
