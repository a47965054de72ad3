/* file.c -- regular files only (file.h). */
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int tt_open_regular(const char *path, struct stat *st)
{
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return -1;
    int failed = fstat(fd, st) != 0 ? errno : !S_ISREG(st->st_mode) ? EINVAL : 0;
    if (failed) {
        close(fd);
        errno = failed;
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}
