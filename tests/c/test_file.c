/* test_file.c -- what tracetop writes is opened as file.h says: never through
 * a link, never a file of another user's or with another name, owner-only
 * when new, emptied when it is ours; a device the user names is written. */
#define _GNU_SOURCE
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "scratch.h"

static char dir[64], path[128], target[128];

static const char *at(const char *name)
{
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static void put(const char *name, const char *text)
{
    FILE *f = fopen(at(name), "w");
    fputs(text, f);
    fclose(f);
}

static long size_of(const char *name)
{
    struct stat st;
    return stat(at(name), &st) == 0 ? (long)st.st_size : -1;
}

/* -1 and errno, or 0 after a write of "new" through the descriptor. */
static int write_output(const char *name)
{
    int fd = tt_open_output(AT_FDCWD, at(name), O_WRONLY);
    if (fd < 0) return -1;
    int ok = write(fd, "new", 3) == 3;
    close(fd);
    return ok ? 0 : -1;
}

static void test_new_file_is_owner_only(void)
{
    mode_t was = umask(0);
    CHECK_U64(write_output("made"), 0);
    umask(was);
    struct stat st;
    CHECK(lstat(at("made"), &st) == 0 && (st.st_mode & 07777) == TT_FILE_MODE);
    CHECK_U64(size_of("made"), 3);
}

static void test_own_file_is_emptied(void)
{
    put("old", "a longer text than new");
    CHECK_U64(write_output("old"), 0);
    CHECK_U64(size_of("old"), 3);
}

static void test_link_is_not_followed(void)
{
    put("target", "precious");
    snprintf(target, sizeof target, "%s/target", dir);
    CHECK(symlink(target, at("link")) == 0);
    errno = 0;
    CHECK(write_output("link") < 0 && errno == ELOOP);
    CHECK_U64(size_of("target"), 8);
    CHECK_STR(tt_output_problem(ELOOP), "it is a symbolic link, which is not followed");
}

static void test_file_with_another_name_is_left_alone(void)
{
    put("original", "precious");
    snprintf(target, sizeof target, "%s/original", dir);
    CHECK(link(target, at("hardlink")) == 0);
    errno = 0;
    CHECK(write_output("hardlink") < 0 && errno == EPERM);
    CHECK_U64(size_of("original"), 8);
}

static void test_fifo_is_refused_without_waiting(void)
{
    CHECK(mkfifo(at("fifo"), 0600) == 0);
    errno = 0;
    CHECK(write_output("fifo") < 0 && (errno == EINVAL || errno == ENXIO));
}

static void test_device_is_written(void)
{
    int fd = tt_open_output(AT_FDCWD, "/dev/null", O_WRONLY);
    CHECK(fd >= 0 && write(fd, "new", 3) == 3);
    close(fd);
}

static void test_private_directory(void)
{
    struct stat st;
    CHECK(mkdir(at("private"), 0700) == 0 && stat(path, &st) == 0 && tt_dir_is_private(&st));
    CHECK(chmod(path, 0770) == 0 && stat(path, &st) == 0 && !tt_dir_is_private(&st));
    CHECK(chmod(path, 0703) == 0 && stat(path, &st) == 0 && !tt_dir_is_private(&st));
    CHECK(stat(at("made"), &st) == 0 && !tt_dir_is_private(&st));
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/tracetop-test-file-XXXXXX");
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    test_new_file_is_owner_only();
    test_own_file_is_emptied();
    test_link_is_not_followed();
    test_file_with_another_name_is_left_alone();
    test_fifo_is_refused_without_waiting();
    test_device_is_written();
    test_private_directory();
    scratch_remove(dir);
    return check_report();
}
