/*
 * fault_mask.c - the fault signals stay unblocked in the kernel; each
 * thread reads back what it asked for (see fault_mask.h).
 */
#include "fault_mask.h"
#include "endings.h"
#include "real_fns.h"

#include <errno.h>
#include <signal.h>

typedef int (*mask_fn)(int, const sigset_t *, sigset_t *);

static const int faults[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE };
#define N_FAULTS (sizeof faults / sizeof *faults)

/* Bit i: this thread asked to block faults[i].  One byte of static TLS. */
static _Thread_local unsigned char asked_blocked;

int own_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    mask_fn real = REAL(pthread_sigmask, mask_fn);
    return real ? real(how, set, old) : ENOSYS;
}

/* real's convention (an errno value, or -1 and errno) is the caller's: 0
 * is success for both. */
static int set_mask(mask_fn real, int how, const sigset_t *set, sigset_t *old)
{
    unsigned char before = asked_blocked, after = before;
    sigset_t kernel;
    const sigset_t *pass = set;
    if (set && (how == SIG_BLOCK || how == SIG_SETMASK)) {
        unsigned char named = 0;
        kernel = *set;
        for (unsigned i = 0; i < N_FAULTS; i++)
            if (sigismember(set, faults[i]) == 1) {
                named |= (unsigned char)(1u << i);
                sigdelset(&kernel, faults[i]);
            }
        after = how == SIG_BLOCK ? (unsigned char)(before | named) : named;
        pass = &kernel;
    } else if (set && how == SIG_UNBLOCK) {
        /* As asked: it also unblocks one blocked before we were here (a
         * mask inherited across exec). */
        for (unsigned i = 0; i < N_FAULTS; i++)
            if (sigismember(set, faults[i]) == 1)
                after &= (unsigned char)~(1u << i);
    }
    /* A vfork child shares this thread's memory, TLS included: its mask
     * is its own business, and the parent's record is left alone (asked
     * only on a change, as getpid is a system call). */
    if (after != before && !endings_ours())
        return real(how, set, old);
    int rc = real(how, pass, old);
    if (rc != 0)
        return rc;
    if (old)
        for (unsigned i = 0; i < N_FAULTS; i++)
            if (before & (1u << i))
                sigaddset(old, faults[i]);
    asked_blocked = after;
    return 0;
}

int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    mask_fn real = REAL(pthread_sigmask, mask_fn);
    if (!real)
        return ENOSYS;
    return set_mask(real, how, set, old);
}

int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    mask_fn real = REAL(sigprocmask, mask_fn);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    return set_mask(real, how, set, old);
}
