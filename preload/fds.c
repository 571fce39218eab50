/*
 * fds.c - the tracer's descriptors stay out of the app's way (see fds.h).
 *
 * Why interpose rather than only check before writing: a daemon that closes
 * every descriptor above 2 and then opens its own files gets our old numbers,
 * and a check cannot tell our file from the app's new one once both are
 * gone; libunwind, which writes to its pipe from inside our stack captures,
 * checks nothing at all.  The log is also checked before every write
 * (log_file.c), for what goes around these functions (raw system calls).
 */
#include "fds.h"
#include "real_fns.h"
#include "flusher.h"
#include "log_file.h"
#include "recorder.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef int (*close_fn)(int);
typedef int (*dup3_fn)(int, int, int);
typedef int (*close_range_fn)(unsigned, unsigned, int);
typedef void (*closefrom_fn)(int);
typedef int (*dup2_fn)(int, int);
typedef int (*pipe2_fn)(int *, int);
typedef int (*pipe_fn)(int *);

#define TLS static __thread __attribute__((tls_model("initial-exec")))
#define MAX_OURS 4

static _Atomic int ours[MAX_OURS] = { -1, -1, -1, -1 };
TLS int in_unwinder;
static _Atomic int unwinder_lost;

int fds_real_close(int fd)
{
    close_fn close_next = REAL(close, close_fn);
    return close_next ? close_next(fd) : (int)syscall(SYS_close, fd);
}

int fds_real_dup3(int oldfd, int newfd, int flags)
{
    dup3_fn dup3_next = REAL(dup3, dup3_fn);
    return dup3_next ? dup3_next(oldfd, newfd, flags) : (int)syscall(SYS_dup3, oldfd, newfd, flags);
}

static int real_close_range(unsigned lo, unsigned hi, int flags)
{
    close_range_fn close_range_next = REAL(close_range, close_range_fn);
    return close_range_next ? close_range_next(lo, hi, flags)
                            : (int)syscall(SYS_close_range, lo, hi, flags);
}

/* Below the soft limit (some apps open up to it) and not so high that the
 * kernel grows a huge descriptor table for us: about 1000, or three
 * quarters of a small limit. */
static long high_target(void)
{
    struct rlimit rl;
    long top = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 1024)
        top = (long)rl.rlim_cur;
    return top > 64 ? top - 32 : top * 3 / 4;
}

int fds_copy_high(int fd)
{
    return fcntl(fd, F_DUPFD_CLOEXEC, (int)high_target());
}

int fds_move_high(int fd)
{
    long target = high_target();
    if (fd < 0 || fd >= target) {
        if (fd >= 0)
            fcntl(fd, F_SETFD, FD_CLOEXEC);
        return fd;
    }
    int high = fcntl(fd, F_DUPFD_CLOEXEC, (int)target);
    if (high < 0) {
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        return fd;
    }
    fds_real_close(fd);
    return high;
}

void fds_add(int fd)
{
    for (int i = 0; i < MAX_OURS; i++) {
        int expected = -1;
        if (atomic_compare_exchange_strong(&ours[i], &expected, fd))
            return;
    }
}

void fds_remove(int fd)
{
    for (int i = 0; i < MAX_OURS; i++) {
        int expected = fd;
        atomic_compare_exchange_strong(&ours[i], &expected, -1);
    }
}

int fds_is_ours(int fd)
{
    if (fd < 0)
        return 0;
    for (int i = 0; i < MAX_OURS; i++)
        if (atomic_load_explicit(&ours[i], memory_order_relaxed) == fd)
            return 1;
    return 0;
}

void fds_unwinder_enter(void) { in_unwinder = 1; }
void fds_unwinder_leave(void) { in_unwinder = 0; }
int fds_unwinder_lost(void) { return atomic_load_explicit(&unwinder_lost, memory_order_relaxed); }

/* Ours inside [lo, hi], ascending; returns how many. */
static int ours_in(unsigned lo, unsigned hi, unsigned out[MAX_OURS])
{
    int n = 0;
    for (int i = 0; i < MAX_OURS; i++) {
        int fd = atomic_load(&ours[i]);
        if (fd >= 0 && (unsigned)fd >= lo && (unsigned)fd <= hi)
            out[n++] = (unsigned)fd;
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && out[j - 1] > out[j]; j--) {
            unsigned t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

/* ------------------------------------------------------- the interposers */

int close(int fd)
{
    if (fds_is_ours(fd) && !in_unwinder)
        return 0;   /* the app closing a number it never had: nothing to close */
    if (in_unwinder)
        fds_remove(fd);
    return fds_real_close(fd);
}

/* [lo, hi] minus our descriptors: the pieces in between, each closed by
 * close_piece (the last one, up to hi, by close_tail). */
static int close_around(unsigned lo, unsigned hi, int flags, void (*close_tail)(unsigned from))
{
    unsigned skip[MAX_OURS];
    int n = lo <= hi ? ours_in(lo, hi, skip) : 0;
    int rc = 0;
    unsigned from = lo;
    for (int i = 0; i < n; i++) {
        if (skip[i] > from && real_close_range(from, skip[i] - 1, flags) != 0)
            rc = -1;
        if (skip[i] == UINT_MAX)
            return rc;
        from = skip[i] + 1;
    }
    if (from > hi)
        return rc;
    if (close_tail) {
        close_tail(from);
        return rc;
    }
    return real_close_range(from, hi, flags) != 0 ? -1 : rc;
}

int close_range(unsigned lo, unsigned hi, int flags)
{
    return close_around(lo, hi, flags, NULL);
}

static void real_closefrom(unsigned from)
{
    closefrom_fn closefrom_next = REAL(closefrom, closefrom_fn);
    if (closefrom_next && from <= INT_MAX)
        closefrom_next((int)from);
    else
        real_close_range(from, ~0u, 0);
}

void closefrom(int lo)
{
    int saved = errno;
    close_around(lo < 0 ? 0 : (unsigned)lo, ~0u, 0, real_closefrom);
    errno = saved;
}

static int onto_ours(int newfd)
{
    if (!fds_is_ours(newfd))
        return 0;
    if (log_owns_fd(newfd)) {
        flusher_run_locked(log_move_away);
    } else {
        /* libunwind's pipe: its numbers live inside libunwind, where we
         * cannot change them.  Let the app have the number and take no
         * more native stacks (libunwind would use the app's file). */
        if (!atomic_exchange(&unwinder_lost, 1))
            rec_info("native_stacks", "off: the program put a file of its own on the unwinder's descriptor");
        fds_remove(newfd);
    }
    return 1;
}

int dup2(int oldfd, int newfd)
{
    if (oldfd != newfd)
        onto_ours(newfd);
    dup2_fn dup2_next = REAL(dup2, dup2_fn);
    return dup2_next ? dup2_next(oldfd, newfd) : (int)syscall(SYS_dup2, oldfd, newfd);
}

int dup3(int oldfd, int newfd, int flags)
{
    if (oldfd != newfd)
        onto_ours(newfd);
    return fds_real_dup3(oldfd, newfd, flags);
}

/* libunwind's pipe, opened inside our calls: moved high, and ours. */
static void adopt_pipe(int fds[2])
{
    for (int i = 0; i < 2; i++) {
        fds[i] = fds_move_high(fds[i]);
        fds_add(fds[i]);
    }
}

int pipe2(int fds[2], int flags)
{
    pipe2_fn pipe2_next = REAL(pipe2, pipe2_fn);
    int rc = pipe2_next ? pipe2_next(fds, flags) : (int)syscall(SYS_pipe2, fds, flags);
    if (rc == 0 && in_unwinder)
        adopt_pipe(fds);
    return rc;
}

int pipe(int fds[2])
{
    pipe_fn pipe_next = REAL(pipe, pipe_fn);
    int rc = pipe_next ? pipe_next(fds) : (int)syscall(SYS_pipe2, fds, 0);
    if (rc == 0 && in_unwinder)
        adopt_pipe(fds);
    return rc;
}
