/* file.c -- regular files only, never through a link (file.h). */
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* Opened with O_NONBLOCK, which is taken off again: opening a FIFO would
 * wait for its other end. Keeps the descriptor of a regular file, or of a
 * character device when `devices`. */
static int checked(int fd, struct stat *st, int devices)
{
    if (fd < 0) return -1;
    int failed = fstat(fd, st) != 0 ? errno : !S_ISREG(st->st_mode) && !(devices && S_ISCHR(st->st_mode)) ? EINVAL : 0;
    if (failed) {
        close(fd);
        errno = failed;
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

int tt_open_regular(const char *path, struct stat *st)
{
    return checked(open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), st, 0);
}

int tt_open_output(int dirfd, const char *path, int access)
{
    /* Not O_TRUNC: what is there is emptied once it is known to be ours. */
    struct stat st;
    int fd = checked(openat(dirfd, path, access | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, TT_FILE_MODE), &st, 1);
    if (fd < 0 || S_ISCHR(st.st_mode)) return fd;
    int failed = st.st_uid != geteuid() || st.st_nlink > 1 ? EPERM : ftruncate(fd, 0) != 0 ? errno : 0;
    if (failed) {
        close(fd);
        errno = failed;
        return -1;
    }
    return fd;
}

const char *tt_output_problem(int e)
{
    switch (e) {
    case ELOOP:
        return "it is a symbolic link, which is not followed";
    case EPERM:
        return "it is another user's file, or has another name";
    case EINVAL:
        return "it is not a regular file";
    default:
        return strerror(e);
    }
}

int tt_dir_is_private(const struct stat *st)
{
    return S_ISDIR(st->st_mode) && st->st_uid == geteuid() && !(st->st_mode & (S_IWGRP | S_IWOTH));
}
