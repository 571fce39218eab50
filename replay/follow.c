/*
 * follow.c - a log read while it is written (see follow.h).
 */
#include "follow.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "xalloc.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

/* A safety net under inotify and the pidfd: look again this often anyway
 * (a file system without inotify events, NFS; a kernel without pidfds). */
#define POLL_MS 200

typedef struct follow {
    char path[PATH_MAX];
    int inotify;               /* watches the log's directory; -1 if none */
    int pid;                   /* the writer, 0 while unknown */
    int pidfd;                 /* held once checked; -1 if none */
    int gone;                  /* the writer exited (or was never found again) */
    int checked;               /* pid was checked against the header */
    rp_follow_end ending;
} follow;

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

void rp_follow_catch_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;   /* no SA_RESTART: poll() returns EINTR */
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
        /* One ignored by whoever started us stays ignored (trace-run lets
         * the command alone take ^C, and waits for its log to end). */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Process state and start time (CLOCK_MONOTONIC ns) from /proc; 0 when the
 * process does not exist. */
static int proc_stat(int pid, char *state, uint64_t *start_mono_ns)
{
    char name[64], buf[1024];
    snprintf(name, sizeof name, "/proc/%d/stat", pid);
    int fd = open(name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* "pid (comm) S ppid ...": comm may hold spaces and parentheses. */
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ')
        return 0;
    *state = p[2];
    p += 3;
    unsigned long long start = 0;
    for (int field = 4; field <= 22 && p; field++) {
        p = strchr(p, ' ');
        if (p && field == 22)
            start = strtoull(p + 1, NULL, 10);
        if (p)
            p++;
    }
    long hz = sysconf(_SC_CLK_TCK);
    /* starttime is in ticks since boot (CLOCK_BOOTTIME); monotonic differs
     * by the time spent suspended. */
    uint64_t boot_to_mono = clock_ns(CLOCK_BOOTTIME) - clock_ns(CLOCK_MONOTONIC);
    uint64_t start_boot = (uint64_t)start * (1000000000u / (uint64_t)(hz > 0 ? hz : 100));
    *start_mono_ns = start_boot > boot_to_mono ? start_boot - boot_to_mono : 0;
    return 1;
}

/* Is pid the process that wrote a log started at mono_start_ns (0: no
 * header yet, any process with that pid)?  A process started after the
 * log did not write it: its pid was reused. */
static int is_writer(int pid, uint64_t mono_start_ns)
{
    char state;
    uint64_t started;
    if (!proc_stat(pid, &state, &started) || state == 'Z' || state == 'X')
        return 0;
    /* Ticks are coarse (10 ms): allow two. */
    return !mono_start_ns || started <= mono_start_ns + 20000000u;
}

static void hold_writer(follow *f, int pid, uint64_t mono_start_ns)
{
    if (f->pidfd >= 0 || f->gone)
        return;
    f->pid = pid;
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    /* Checked after the handle is taken: the handle then names the process
     * checked, whatever happens to the number. */
    if (!is_writer(pid, mono_start_ns)) {
        if (fd >= 0)
            close(fd);
        f->gone = 1;
        return;
    }
    f->pidfd = fd;   /* -1 on kernels without pidfds: checked by number */
}

static int writer_alive(follow *f, uint64_t mono_start_ns)
{
    if (f->gone || !f->pid)
        return !f->gone;
    if (f->pidfd >= 0) {
        struct pollfd p = {f->pidfd, POLLIN, 0};
        if (poll(&p, 1, 0) > 0)
            f->gone = 1;   /* readable: it exited */
    } else if (!is_writer(f->pid, mono_start_ns)) {
        f->gone = 1;
    }
    return !f->gone;
}

/* Sleep until the directory changes, the writer exits, a signal, or
 * POLL_MS. */
static void wait_change(follow *f)
{
    struct pollfd p[2];
    int n = 0;
    if (f->inotify >= 0)
        p[n++] = (struct pollfd){f->inotify, POLLIN, 0};
    if (f->pidfd >= 0)
        p[n++] = (struct pollfd){f->pidfd, POLLIN, 0};
    if (poll(p, (nfds_t)n, POLL_MS) > 0 && f->inotify >= 0 && p[0].revents) {
        char buf[4096];
        while (read(f->inotify, buf, sizeof buf) > 0)
            ;
    }
}

static int follow_next(rp_source *s, tf_event *e)
{
    follow *f = s->ctx;
    const tf_header *h = tf_reader_header(s->reader);
    for (;;) {
        if (tf_reader_next(s->reader, e)) {
            rp_progress_tick(&s->progress, e->seq);
            return 1;
        }
        const tf_read_status *st = tf_reader_status(s->reader);
        if (!st->waiting) {
            if (f->ending == RP_FOLLOW_RUNNING)
                f->ending = st->clean_end ? RP_FOLLOW_END : RP_FOLLOW_GONE;
            rp_progress_done(&s->progress);
            return 0;
        }
        if (interrupted) {
            f->ending = RP_FOLLOW_INTERRUPTED;
            tf_reader_final(s->reader);   /* what is there is read, then it ends */
            continue;
        }
        if (!writer_alive(f, h->mono_start_ns)) {
            tf_reader_final(s->reader);
            continue;
        }
        wait_change(f);
    }
}

static void follow_close(rp_source *s)
{
    follow *f = s->ctx;
    if (!f)
        return;
    if (f->inotify >= 0)
        close(f->inotify);
    if (f->pidfd >= 0)
        close(f->pidfd);
    free(f);
    s->ctx = NULL;
}

static int follow_rewind(rp_source *s)
{
    (void)s;
    return -1;   /* a log being written is read once */
}

static void watch_directory(follow *f)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", f->path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        strcpy(dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    f->inotify = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (f->inotify >= 0 &&
        inotify_add_watch(f->inotify, dir, IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE) < 0) {
        close(f->inotify);
        f->inotify = -1;
    }
}

int rp_follow_open(rp_source *s, const char *path, int pid, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    follow *f = rp_xcalloc(1, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", path);
    f->pidfd = -1;
    f->ending = RP_FOLLOW_RUNNING;
    s->ctx = f;
    s->close = follow_close;
    s->path = path;
    watch_directory(f);
    if (pid > 0)
        hold_writer(f, pid, 0);
    for (;;) {
        int again = 0;
        s->reader = tf_reader_open_follow(path, &again, err, errlen);
        if (s->reader)
            break;
        if (!again)
            goto fail;
        if (interrupted) {
            f->ending = RP_FOLLOW_INTERRUPTED;
            snprintf(err, errlen, "interrupted while waiting for %s", path);
            goto fail;
        }
        if (pid > 0 && !writer_alive(f, 0)) {
            /* One last look: it may have written the log as it ended. */
            s->reader = tf_reader_open_follow(path, &again, err, errlen);
            if (s->reader)
                break;
            f->ending = RP_FOLLOW_NO_LOG;
            snprintf(err, errlen, "process %d ended without writing %s", pid, path);
            goto fail;
        }
        wait_change(f);
    }
    const tf_header *h = tf_reader_header(s->reader);
    if (pid > 0 && (int)h->pid != pid) {
        snprintf(err, errlen, "%s was written by process %u, not %d", path, h->pid, pid);
        goto fail;
    }
    /* The handle taken on --pid was checked without the header: check
     * again now that the log says when its writer started. */
    if (f->pidfd >= 0 && !is_writer((int)h->pid, h->mono_start_ns))
        f->gone = 1;
    if (!f->pid)
        hold_writer(f, (int)h->pid, h->mono_start_ns);
    s->next = follow_next;
    s->rewind = follow_rewind;
    s->what = "trace-replay check --follow";
    s->run = 1;
    rp_progress_start(&s->progress, s->what);
    return 0;
fail:
    if (s->reader)
        tf_reader_close(s->reader);
    s->reader = NULL;
    follow_close(s);
    s->close = NULL;
    return -1;
}

rp_follow_end rp_follow_ending(const rp_source *s)
{
    const follow *f = s->ctx;
    return f ? f->ending : RP_FOLLOW_NO_LOG;
}

int rp_follow_pid(const rp_source *s)
{
    const follow *f = s->ctx;
    return f ? f->pid : 0;
}

int rp_follow_signal(rp_source *s, int sig)
{
    follow *f = s->ctx;
    if (!f || !f->pid || f->gone)
        return -1;
    if (f->pidfd >= 0)
        return syscall(SYS_pidfd_send_signal, f->pidfd, sig, NULL, 0) == 0 ? 0 : -1;
    const tf_header *h = tf_reader_header(s->reader);
    if (!is_writer(f->pid, h->mono_start_ns))
        return -1;
    return kill(f->pid, sig) == 0 ? 0 : -1;
}
