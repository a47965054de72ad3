/* file.h -- opening the files of an experiment, for reading and for writing.
 *
 * An experiment directory is input: anything may lie where a trace file is
 * expected. A FIFO would block open() and read() forever, a device would be
 * read as data; only regular files are opened, and without waiting.
 *
 * It is output too, in a directory another local user may have made or
 * reached first: a symbolic link planted where tracetop writes would have
 * it overwrite whatever the link names, with the measuring user's rights.
 * So what tracetop writes is opened without following a link in the last
 * component (O_NOFOLLOW), made owner-only (TT_FILE_MODE, TT_DIR_MODE) like
 * the live channel, and an existing file is emptied only when it is a
 * regular file of this user's with no other name (a hard link to another's
 * file is not).
 */
#ifndef TRACETOP_FILE_H
#define TRACETOP_FILE_H

#include <sys/stat.h>

#define TT_FILE_MODE 0600
#define TT_DIR_MODE 0700

/* A descriptor of `path` opened read-only (close-on-exec) and its stat;
 * -1 with errno set when it cannot be opened or is not a regular file
 * (EINVAL then). */
int tt_open_regular(const char *path, struct stat *st);

/* A descriptor of `path` (relative to the directory `dirfd`, or AT_FDCWD)
 * opened with `access` (O_WRONLY or O_RDWR) and close-on-exec: a regular
 * file, empty, made with TT_FILE_MODE when new, or a character device the
 * user names (/dev/null). -1 with errno: ELOOP for a symbolic link, EINVAL
 * for anything else that is not a regular file (a FIFO), EPERM for a file
 * of another user's or with another link. */
int tt_open_output(int dirfd, const char *path, int access);

/* What tt_open_output's errno `e` means, for a message's end. */
const char *tt_output_problem(int e);

/* Whether `st` is a directory that only this user may change: its own, and
 * writable by neither its group nor others. */
int tt_dir_is_private(const struct stat *st);

#endif
