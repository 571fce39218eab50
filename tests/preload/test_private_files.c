/*
 * test_private_files.c - the flusher's helper thread and its descriptor
 * table of its own, and the guards where there is none
 * (preload/private_files.h).
 */
#include "private_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

__thread int host_guard __attribute__((tls_model("initial-exec")));

static int failures;
#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            failures++;                                                     \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);            \
            fprintf(stderr, __VA_ARGS__);                                   \
            fprintf(stderr, "\n");                                          \
        }                                                                   \
    } while (0)

static char dir[] = "/tmp/test_private_files.XXXXXX";

/* Opens a file and leaves it open: its number, and its tid. */
struct opened { int fd; pid_t tid; struct stat st; };

static int open_one(void *arg)
{
    struct opened *o = arg;
    char name[64];
    snprintf(name, sizeof name, "%s/helper", dir);
    o->fd = open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    o->tid = (pid_t)syscall(SYS_gettid);
    if (o->fd >= 0)
        fstat(o->fd, &o->st);
    return 7;
}

static int close_it(void *arg)
{
    return close(*(int *)arg);
}

static int count_threads(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* Threads before the helper was launched (main's). */
static int threads_before;

/* pthread_join returns once the kernel clears the thread's tid, which is
 * before the task leaves /proc/self/task: give it a moment. */
static int count_threads_settled(int want)
{
    int n = count_threads();
    for (int i = 0; i < 2000 && n != want; i++) {
        usleep(1000);
        n = count_threads();
    }
    return n;
}

/* The flusher's part: adopt the helper its starter launched, work there,
 * stop, on one thread. */
static void *as_flusher(void *arg)
{
    int *ends = arg;
    pid_t me = (pid_t)syscall(SYS_gettid);
    int before = threads_before + 1;   /* and this thread */
    pf_start();
    CHECK(pf_helper_running(), "the helper did not start (unshare or close_range refused?)");
    CHECK(count_threads() == before + 1, "threads %d, expected %d", count_threads(), before + 1);

    /* The program closes its pipe's write end: the helper's copy of the
     * table was emptied, so the reader sees the end at once. */
    close(ends[1]);
    struct pollfd pfd = { .fd = ends[0], .events = POLLIN };
    char c;
    CHECK(poll(&pfd, 1, 2000) == 1 && read(ends[0], &c, 1) == 0,
          "no end of the pipe: the helper's copy of the table holds it open");

    struct opened o = { .fd = -1 };
    CHECK(pf_run(open_one, &o) == 7, "pf_run's value");
    CHECK(o.tid != me && o.tid != 0, "ran on the calling thread (%d)", (int)o.tid);
    CHECK(o.fd >= 0, "the helper could not open: %s", strerror(errno));
    /* Not in this (the program's) table: the number is free here, or
     * holds another file. */
    struct stat st;
    CHECK(fstat(o.fd, &st) != 0 || st.st_ino != o.st.st_ino, "the helper's descriptor %d is in the program's table",
          o.fd);
    /* Its table holds nothing of the program's: its first file is 0. */
    CHECK(o.fd == 0, "the helper's first descriptor is %d, not 0: its table was not emptied", o.fd);
    CHECK(pf_run(close_it, &o.fd) == 0, "closing the helper's descriptor there");

    pf_stop();
    CHECK(!pf_helper_running(), "still running after pf_stop");
    int after = count_threads_settled(before);
    CHECK(after == before, "threads %d after stop, expected %d", after, before);
    /* Stopped: the work runs here again. */
    CHECK(pf_run(open_one, &o) == 7 && o.tid == me, "after stop, ran on %d, not here (%d)", (int)o.tid, (int)me);
    if (o.fd >= 0)
        close(o.fd);
    return NULL;
}

/* Without a helper, pf_run runs the work on the caller's thread. */
static void inline_without_helper(void)
{
    struct opened o = { .fd = -1 };
    CHECK(pf_run(open_one, &o) == 7 && o.tid == (pid_t)syscall(SYS_gettid), "not run here");
    if (o.fd >= 0)
        close(o.fd);
}

/* The guards: our number closed by the program and reused for its own
 * file is neither written into nor closed. */
static void guards(void)
{
    char ours_name[64], theirs_name[64];
    snprintf(ours_name, sizeof ours_name, "%s/ours", dir);
    snprintf(theirs_name, sizeof theirs_name, "%s/theirs", dir);
    pf_file f = { .fd = open(ours_name, O_WRONLY | O_CREAT | O_APPEND, 0600) };
    struct stat st;
    fstat(f.fd, &st);
    f.dev = st.st_dev;
    f.ino = st.st_ino;
    size_t written = 99;
    CHECK(pf_still_ours(&f), "just opened");
    CHECK(pf_write_all(&f, "abc", 3, &written) == 0 && written == 3, "a plain write");

    int theirs = open(theirs_name, O_RDWR | O_CREAT, 0600);
    CHECK(dup2(theirs, f.fd) == f.fd, "dup2");   /* the program's file in our number */
    close(theirs);
    CHECK(!pf_still_ours(&f), "another file in our number still taken for ours");
    CHECK(pf_write_all(&f, "xyz", 3, &written) == -EBADF && written == 0, "written into the program's file");
    pf_close(&f);
    CHECK(fcntl(f.fd, F_GETFD) >= 0, "the program's descriptor was closed");
    CHECK(fstat(f.fd, &st) == 0 && st.st_size == 0, "the program's file holds %lld bytes", (long long)st.st_size);
    close(f.fd);
    /* Closed and not reused: nothing to write to, nothing closed. */
    CHECK(pf_write_all(&f, "xyz", 3, &written) == -EBADF, "a closed number");
    CHECK(stat(ours_name, &st) == 0 && st.st_size == 3, "our file holds %lld bytes", (long long)st.st_size);
    unlink(ours_name);
    unlink(theirs_name);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    inline_without_helper();
    guards();
    int p[2];
    if (pipe(p) != 0)
        return 1;
    /* A launch whose flusher never came: cancelled, the thread gone. */
    threads_before = count_threads();
    CHECK(pf_launch(NULL) == 0, "launch");
    pf_cancel();
    CHECK(!pf_helper_running(), "running after a cancel");
    int left = count_threads_settled(threads_before);
    CHECK(left == threads_before, "threads %d after a cancel, expected %d", left, threads_before);
    /* Launched here, as the flusher's starter does, then adopted. */
    CHECK(pf_launch(NULL) == 0, "launch");
    pthread_t t;
    pthread_create(&t, NULL, as_flusher, p);
    pthread_join(t, NULL);
    close(p[0]);
    char name[64];
    snprintf(name, sizeof name, "%s/helper", dir);
    unlink(name);
    rmdir(dir);
    if (failures)
        return 1;
    printf("private files: helper's table its own, guards hold\n");
    return 0;
}
