/*
 * log_file.c - create the log safely, append frames, fail quietly.
 */
#include "log_file.h"
#include "config.h"
#include "recorder_core.h"
#include "warn.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* Level 1: the flusher shares the CPU with the app; the log is small anyway
 * because stacks and strings are written once. */
#define COMPRESSION_LEVEL 1
/* Our descriptor is moved above the numbers apps use, so an app that closes
 * a range of low descriptors and opens a file of its own does not get our
 * number and our frames. */
#define HIGH_FD 900

static int fd = -1;
static int failed;

static void give_up(const char *what, int err)
{
    failed = 1;
    rec_stop();
    trace_warn("%s %s: %s; tracing stopped, the program continues", what,
               trace_config_get()->output, strerror(err));
}

static int open_log(void)
{
    const char *path = trace_config_get()->output;
    int f = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (f < 0) {
        give_up("cannot create", errno);
        return -1;
    }
    int high = fcntl(f, F_DUPFD_CLOEXEC, HIGH_FD);
    if (high >= 0) {
        close(f);
        f = high;
    }
    fd = f;
    return 0;
}

int log_write(const tf_chunk *c, void *cctx)
{
    if (failed || (fd < 0 && open_log() < 0))
        return -1;
    int rc = tf_chunk_write(fd, c, cctx, COMPRESSION_LEVEL);
    if (rc < 0) {
        give_up("cannot write", -rc);
        return -1;
    }
    return 0;
}

void log_close(void)
{
    if (fd >= 0)
        close(fd);
    fd = -1;
}

void log_fork_child(void)
{
    log_close();
    failed = 0;
}

int log_failed(void)
{
    return failed;
}
