/*
 * log_file.c - create the log safely, append frames, fail quietly (see
 * log_file.h for why no descriptor is kept).
 */
#include "log_file.h"
#include "config.h"
#include "recorder_core.h"
#include "warn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Names tried before giving up: trace-1.tlog, trace-1.1.tlog, ... */
#define MAX_ATTEMPTS 1000

static int created;         /* the file exists, and is this one: */
static dev_t file_dev;
static ino_t file_ino;
static char path[4096];
static int failed;
static uint8_t *frame;      /* the compressed frame: mapped pages (a signal
                               handler may write the log) */
static size_t frame_cap;

static void give_up(const char *what, int err)
{
    failed = 1;
    rec_stop();
    trace_warn("%s %s: %s; tracing stopped, the program continues", what, log_path(),
               strerror(err));
}

const char *log_path(void)
{
    return path[0] ? path : trace_config_get()->output;
}

static int out_of_descriptors(int err)
{
    return err == EMFILE || err == ENFILE || err == EINTR;
}

/* The first write: the first free name, created, never an existing file. */
static int create(void)
{
    char name[sizeof path];
    for (unsigned n = 0; n < MAX_ATTEMPTS; n++) {
        if (trace_config_output_path(name, sizeof name, n) < 0) {
            give_up("cannot create", ENAMETOOLONG);
            return -1;
        }
        int fd = open(name, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0) {
            snprintf(path, sizeof path, "%s", name);
            file_dev = st.st_dev;
            file_ino = st.st_ino;
            created = 1;
            return fd;
        }
        int err = fd >= 0 ? errno : errno;
        if (fd >= 0)
            close(fd);
        if (out_of_descriptors(err))
            return -EAGAIN;
        /* Taken (an earlier image of this process, an old log with the
         * same pid, a symlink): the next name.  A directory: a mistake. */
        if (err != EEXIST || (lstat(name, &st) == 0 && S_ISDIR(st.st_mode))) {
            snprintf(path, sizeof path, "%s", name);
            give_up("cannot create", err == EEXIST ? EISDIR : err);
            return -1;
        }
    }
    give_up("cannot create", EEXIST);
    return -1;
}

/* Later writes: the file we created, by its path, or nothing. */
static int reopen(int flags)
{
    int fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (out_of_descriptors(errno))
            return -EAGAIN;
        give_up("lost", errno);
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_dev != file_dev || st.st_ino != file_ino) {
        close(fd);
        give_up("lost", ESTALE);   /* replaced by another file: not ours to write */
        return -1;
    }
    return fd;
}

static int reserve_frame(size_t need)
{
    if (need <= frame_cap)
        return 0;
    size_t cap = frame_cap ? frame_cap : 256 * 1024;
    while (cap < need)
        cap *= 2;
    void *p = frame ? mremap(frame, frame_cap, cap, MREMAP_MAYMOVE)
                    : mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    frame = p;
    frame_cap = cap;
    return 0;
}

int log_write(const tf_chunk *c, void *cctx)
{
    if (failed)
        return -1;
    if (c->len == 0)
        return 0;
    size_t n = 0;
    if (reserve_frame(tf_chunk_bound(c)) < 0 ||
        !(n = tf_chunk_compress(c, cctx, LOG_COMPRESSION_LEVEL, frame, frame_cap))) {
        give_up("cannot compress for", ENOMEM);
        return -1;
    }
    int fd = created ? reopen(O_WRONLY | O_APPEND) : create();
    if (fd < 0)
        return fd;
    int rc = tf_write_all(fd, frame, n);
    close(fd);
    if (rc < 0) {
        give_up("cannot write", -rc);
        return -1;
    }
    return 0;
}

off_t log_size(void)
{
    struct stat st;
    return created && stat(path, &st) == 0 ? st.st_size : -1;
}

void log_truncate(off_t size)
{
    if (!created || failed || size < 0)
        return;
    int fd = reopen(O_WRONLY);
    if (fd < 0)
        return;
    if (ftruncate(fd, size) != 0)
        give_up("cannot truncate", errno);
    close(fd);
}

void log_fork_child(void)
{
    created = 0;
    failed = 0;
    path[0] = '\0';
}

int log_failed(void)
{
    return failed;
}
