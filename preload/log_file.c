/*
 * log_file.c - create the log safely, append frames, fail quietly.
 */
#include "log_file.h"
#include "config.h"
#include "fds.h"
#include "recorder_core.h"
#include "warn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Names tried before giving up: trace-1.tlog, trace-1.1.tlog, ... */
#define MAX_ATTEMPTS 1000

static int fd = -1;         /* our number: a placeholder until the file exists */
static int created;         /* the file is open at fd */
static dev_t file_dev;      /* and this is it */
static ino_t file_ino;
static char path[4096];
static int failed;

static void give_up(const char *what, int err)
{
    failed = 1;
    rec_stop();
    trace_warn("%s %s: %s; tracing stopped, the program continues", what, log_path(),
               strerror(err));
}

/* Something that holds the number and is nothing: "/" opened O_PATH. */
static int placeholder(void)
{
    return open("/", O_PATH | O_CLOEXEC);
}

void log_file_init(void)
{
    int p = placeholder();
    if (p < 0)
        return;
    fd = fds_move_high(p);
    fds_add(fd);
}

const char *log_path(void)
{
    return path[0] ? path : trace_config_get()->output;
}

/* Put file f at our number (the app never sees a descriptor come or go). */
static void take_number(int f)
{
    if (fd >= 0 && fds_is_ours(fd) && fds_real_dup3(f, fd, O_CLOEXEC) == fd) {
        fds_real_close(f);
        return;
    }
    if (fd >= 0)
        fds_remove(fd);
    fd = fds_move_high(f);
    fds_add(fd);
}

static int open_log(void)
{
    char name[sizeof path];
    int f = -1;
    for (unsigned n = 0; f < 0 && n < MAX_ATTEMPTS; n++) {
        if (trace_config_output_path(name, sizeof name, n) < 0) {
            give_up("cannot create", ENAMETOOLONG);
            return -1;
        }
        f = open(name, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        struct stat st;
        /* Taken (an earlier image of this process, an old log with the
         * same pid, a symlink): the next name.  A directory: a mistake. */
        if (f < 0 && (errno != EEXIST || (lstat(name, &st) == 0 && S_ISDIR(st.st_mode)))) {
            int err = errno == EEXIST ? EISDIR : errno;
            snprintf(path, sizeof path, "%s", name);
            give_up("cannot create", err);
            return -1;
        }
    }
    struct stat st;
    if (f < 0 || fstat(f, &st) != 0) {
        give_up("cannot create", f < 0 ? EEXIST : errno);
        return -1;
    }
    snprintf(path, sizeof path, "%s", name);
    file_dev = st.st_dev;
    file_ino = st.st_ino;
    take_number(f);
    created = 1;
    return 0;
}

/* Is our number still our file?  A raw close_range or dup2 system call
 * goes around fds.c; then the number may be the app's, and is left alone:
 * the file is opened again by its path. */
static int still_ours(void)
{
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_dev == file_dev && st.st_ino == file_ino)
        return 1;
    int f = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    if (f >= 0 && fstat(f, &st) == 0 && st.st_dev == file_dev && st.st_ino == file_ino) {
        fds_remove(fd);
        fd = fds_move_high(f);
        fds_add(fd);
        return 1;
    }
    if (f >= 0)
        fds_real_close(f);
    fds_remove(fd);
    fd = -1;
    give_up("lost", f < 0 ? errno : ESTALE);
    return 0;
}

int log_write(const tf_chunk *c, void *cctx)
{
    if (failed || (!created && open_log() < 0) || !still_ours())
        return -1;
    int rc = tf_chunk_write(fd, c, cctx, LOG_COMPRESSION_LEVEL);
    if (rc < 0) {
        give_up("cannot write", -rc);
        return -1;
    }
    return 0;
}

off_t log_size(void)
{
    struct stat st;
    return created && fstat(fd, &st) == 0 ? st.st_size : 0;
}

void log_truncate(off_t size)
{
    if (created && ftruncate(fd, size) != 0)
        give_up("cannot truncate", errno);
}

int log_owns_fd(int number)
{
    return number >= 0 && number == fd;
}

void log_move_away(void)
{
    int copy = fd >= 0 ? fds_copy_high(fd) : -1;
    if (copy < 0)
        return;
    fds_remove(fd);
    fd = copy;
    fds_add(fd);
}

void log_fork_child(void)
{
    /* The parent's file stays the parent's: our number becomes a
     * placeholder again, for the child's own log. */
    if (created) {
        int p = placeholder();
        if (p >= 0) {
            fds_real_dup3(p, fd, O_CLOEXEC);
            fds_real_close(p);
        } else {
            fds_remove(fd);
            fds_real_close(fd);
            fd = -1;
        }
    }
    created = 0;
    failed = 0;
    path[0] = '\0';
}

int log_failed(void)
{
    return failed;
}
