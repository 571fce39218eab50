/*
 * private_files.c - a helper thread with a descriptor table of its own,
 * and the checks that guard our descriptors where there is none (see
 * private_files.h for why).
 */
#include "private_files.h"
#include "futex.h"
#include "host_blocks.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The helper's word: what the flusher asked of it (futex). */
enum { IDLE, ASKED, DONE, QUIT };
/* The helper's start: unknown yet, its table its own, or given up. */
enum { STARTING, READY, FAILED };

static pthread_t helper;
static _Atomic int running;
/* pf_launch made the thread; pf_start or pf_cancel joins it. */
static _Atomic int launched;
static _Atomic int word;
static _Atomic int start_state;
static int (*job_op)(void *);
static void *job_arg;
static int job_result;
/* This thread started the helper (the flusher): its work goes there. */
static __thread __attribute__((tls_model("initial-exec"))) int starter;
/* This thread is the helper. */
static __thread __attribute__((tls_model("initial-exec"))) int helper_here;

/* A table of its own, empty: close_range with CLOSE_RANGE_UNSHARE over
 * every number makes the thread a new table and copies none of the
 * program's descriptors into it (Linux 5.9).  Not unshare(CLONE_FILES)
 * then a close of everything: the copy would take a reference to each of
 * the program's files, and each close would run the file's flush (an NFS
 * file's write-back, a FUSE daemon's FLUSH request) for the program's
 * files, as if the program had closed a descriptor.  A kernel without it,
 * or a seccomp policy that refuses it: no helper. */
#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif

static int table_of_its_own(void)
{
    return syscall(SYS_close_range, 0L, (long)~0u, (long)CLOSE_RANGE_UNSHARE) == 0;
}

static void *helper_main(void *unused)
{
    (void)unused;
    host_guard_enter();   /* for the thread's life: everything here is ours */
    prctl(PR_SET_NAME, "trace-files");
    if (!table_of_its_own()) {
        atomic_store(&start_state, FAILED);
        futex_wake(&start_state);
        return NULL;
    }
    helper_here = 1;
    atomic_store(&start_state, READY);
    futex_wake(&start_state);
    for (;;) {
        int w = atomic_load(&word);
        if (w == QUIT)
            return NULL;
        if (w != ASKED) {
            futex_wait(&word, w, 0);
            continue;
        }
        job_result = job_op(job_arg);
        atomic_store(&word, DONE);
        futex_wake(&word);
    }
}

/* Called with every signal blocked: so are the helper's (no handler of
 * the program's ever runs on it).  Why not on the flusher: private_files.h. */
int pf_launch(const pthread_attr_t *attr)
{
    if (atomic_load(&running) || atomic_load(&launched))
        return 0;
    atomic_store(&word, IDLE);
    atomic_store(&start_state, STARTING);
    if (pthread_create(&helper, attr, helper_main, NULL) != 0 &&
        (!attr || pthread_create(&helper, NULL, helper_main, NULL) != 0))
        return -1;
    atomic_store(&launched, 1);
    return 0;
}

void pf_start(void)
{
    if (!atomic_load(&launched) || atomic_load(&running))
        return;
    int s;
    while ((s = atomic_load(&start_state)) == STARTING)
        futex_wait(&start_state, STARTING, 0);
    if (s != READY) {
        pf_cancel();
        return;
    }
    starter = 1;
    atomic_store(&running, 1);
}

void pf_cancel(void)
{
    if (!atomic_load(&launched) || atomic_load(&running))
        return;
    atomic_store(&word, QUIT);
    futex_wake(&word);
    pthread_join(helper, NULL);
    atomic_store(&launched, 0);
}

void pf_stop(void)
{
    if (!starter || !atomic_load(&running))
        return;
    atomic_store(&running, 0);
    atomic_store(&word, QUIT);
    futex_wake(&word);
    pthread_join(helper, NULL);
    atomic_store(&launched, 0);
    starter = 0;
}

int pf_run(int (*op)(void *arg), void *arg)
{
    if (!starter || !atomic_load(&running))
        return op(arg);
    job_op = op;
    job_arg = arg;
    atomic_store(&word, ASKED);
    futex_wake(&word);
    int w;
    while ((w = atomic_load(&word)) == ASKED)
        futex_wait(&word, ASKED, 0);
    atomic_store(&word, IDLE);
    return job_result;
}

int pf_helper_running(void)
{
    return atomic_load(&running);
}

int pf_in_private_table(void)
{
    return helper_here;
}

void pf_fork_child(void)
{
    atomic_store(&running, 0);
    atomic_store(&launched, 0);
    atomic_store(&word, IDLE);
    starter = 0;
}

int pf_still_ours(const pf_file *f)
{
    struct stat st;
    return fstat(f->fd, &st) == 0 && st.st_dev == f->dev && st.st_ino == f->ino;
}

int pf_write_all(const pf_file *f, const void *buf, size_t n, size_t *written)
{
    const char *p = buf;
    *written = 0;
    while (n) {
        if (!pf_still_ours(f))
            return -EBADF;
        ssize_t k = write(f->fd, p, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += k;
        n -= (size_t)k;
        *written += (size_t)k;
    }
    return 0;
}

void pf_close(const pf_file *f)
{
    if (f->fd >= 0 && pf_still_ours(f))
        close(f->fd);
}
