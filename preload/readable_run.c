/*
 * readable_run.c - readable memory, by process_vm_readv of our own
 * process, else by rt_sigprocmask (see readable_run.h).
 */
#include "readable_run.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* Pages asked about per call: 32 remote iovecs are 512 bytes of stack. */
#define BATCH 32

/* process_vm_readv refused here (a seccomp policy's EPERM, ENOSYS): ask
 * rt_sigprocmask from then on. */
static _Atomic int vm_readv_refused;

/* The kernel's sigset_t: what rt_sigprocmask copies in from `set`. */
#define KERNEL_SIGSET 8

/* Can the KERNEL_SIGSET bytes at addr be read?  An invalid `how`: the
 * kernel reads the set first (EFAULT where it cannot), then refuses the
 * how (EINVAL), the thread's mask untouched. */
static int sigmask_readable(uintptr_t addr)
{
    return syscall(SYS_rt_sigprocmask, ~0L, addr, 0L, (long)KERNEL_SIGSET) != 0 && errno != EFAULT;
}

/* How many bytes of n pieces of memory (bytes in all, at most BATCH) can
 * be read, from the first: the kernel stops at the first page it cannot
 * read.  -1 where process_vm_readv is refused. */
static long vm_readv(const struct iovec *remote, int n, size_t bytes)
{
    if (atomic_load_explicit(&vm_readv_refused, memory_order_relaxed))
        return -1;
    char sink[BATCH];
    struct iovec local = { .iov_base = sink, .iov_len = bytes };
    /* The same thread group: no ptrace permission is asked (the kernel
     * lets a process read itself). */
    long got = syscall(SYS_process_vm_readv, (long)getpid(), &local, 1L, remote, (long)n, 0L);
    if (got >= 0)
        return got;
    if (errno == EFAULT)
        return 0;   /* the first one is not readable */
    if (errno == EPERM || errno == ENOSYS || errno == EACCES)
        atomic_store_explicit(&vm_readv_refused, 1, memory_order_relaxed);
    return -1;
}

/* How many of the n pages p, p - page, ... can be read, from the first. */
static long pages_readable(uintptr_t p, int n, size_t page)
{
    struct iovec remote[BATCH];
    if (n < 1 || n > BATCH)
        return 0;
    for (int i = 0; i < n; i++)
        remote[i] = (struct iovec){ .iov_base = (void *)(p - (uintptr_t)i * page), .iov_len = 1 };
    long got = vm_readv(remote, n, (size_t)n);
    if (got >= 0)
        return got;
    for (got = 0; got < n && sigmask_readable(p - (uintptr_t)got * page); got++)
        ;
    return got;
}

int readable_bytes(const void *addr, size_t n)
{
    if (n == 0)
        return 1;
    int saved_errno = errno;
    uintptr_t a = (uintptr_t)addr;
    struct iovec remote = { .iov_base = (void *)addr, .iov_len = n < 8 ? n : 8 };
    long got = vm_readv(&remote, 1, remote.iov_len);
    int ok;
    if (got >= 0) {
        ok = (size_t)got == remote.iov_len;   /* it copies up to the first page it cannot read */
    } else {
        /* Readable is per page: the page of the first byte and of the
         * last, each asked at its start (whatever the page size, at least
         * 4 KiB, so the kernel's 8 bytes stay in it). */
        uintptr_t last = a + (n < 8 ? n : 8) - 1, first_page = a & ~(uintptr_t)4095;
        ok = sigmask_readable(first_page) &&
             ((last & ~(uintptr_t)4095) == first_page || sigmask_readable(last & ~(uintptr_t)4095));
    }
    errno = saved_errno;
    return ok;
}

int readable_run_down(uintptr_t top, uintptr_t want, size_t page, uintptr_t *lo)
{
    uintptr_t mask = ~(uintptr_t)(page - 1);
    uintptr_t p = (top - 1) & mask, floor = want & mask;
    if (floor > p)
        floor = p;   /* want at or above top: top's page alone */
    int saved_errno = errno;
    int result;
    for (;;) {
        int n = 1;
        while (n < BATCH && p - (uintptr_t)(n - 1) * page != floor)
            n++;
        long got = pages_readable(p, n, page);
        if (got < n) {
            *lo = p - (uintptr_t)got * page + page;
            result = 0;
            break;
        }
        uintptr_t last = p - (uintptr_t)(n - 1) * page;
        if (last == floor) {
            *lo = floor;
            result = 1;
            break;
        }
        p = last - page;
    }
    errno = saved_errno;
    return result;
}

#define GATHER_MAX 16

/* rt_sigprocmask's answer for the pages of a piece's first and last byte
 * (a piece of at most 4096 bytes touches at most two 4 KiB pages, and a
 * page is never smaller). */
static int piece_readable(const readable_piece *p)
{
    uintptr_t a = (uintptr_t)p->src, last = a + p->len - 1;
    if (last < a)
        return 0;
    uintptr_t first_page = a & ~(uintptr_t)4095, last_page = last & ~(uintptr_t)4095;
    return sigmask_readable(first_page) && (last_page == first_page || sigmask_readable(last_page));
}

int readable_gather(const readable_piece *pieces, int n)
{
    if (n > GATHER_MAX)
        n = GATHER_MAX;
    int m = 0;     /* the pieces asked for: up to the first one too long */
    while (m < n && pieces[m].len > 0 && pieces[m].len <= READABLE_PIECE_MAX)
        m++;
    if (m == 0)
        return 0;
    int saved_errno = errno;
    int whole = -1;
    if (!atomic_load_explicit(&vm_readv_refused, memory_order_relaxed)) {
        struct iovec local[GATHER_MAX], remote[GATHER_MAX];
        for (int i = 0; i < m; i++) {
            local[i] = (struct iovec){ .iov_base = pieces[i].dst, .iov_len = pieces[i].len };
            remote[i] = (struct iovec){ .iov_base = (void *)pieces[i].src, .iov_len = pieces[i].len };
        }
        long got = syscall(SYS_process_vm_readv, (long)getpid(), local, (long)m, remote, (long)m, 0L);
        if (got >= 0) {
            /* The kernel stops at the first page it cannot read. */
            size_t left = (size_t)got;
            for (whole = 0; whole < m && pieces[whole].len <= left; whole++)
                left -= pieces[whole].len;
        } else if (errno == EPERM || errno == ENOSYS || errno == EACCES) {
            atomic_store_explicit(&vm_readv_refused, 1, memory_order_relaxed);
        } else {
            whole = 0;      /* EFAULT: the first page cannot be read */
        }
    }
    if (whole < 0)
        for (whole = 0; whole < m && piece_readable(&pieces[whole]); whole++)
            memcpy(pieces[whole].dst, pieces[whole].src, pieces[whole].len);
    errno = saved_errno;
    return whole;
}
