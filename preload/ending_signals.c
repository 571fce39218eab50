/*
 * ending_signals.c - our handler stands in for SIG_DFL, and only for it
 * (see ending_signals.h).
 *
 * Why not stay installed in front of the app's handlers and chain to them:
 * then our code runs on every signal the app handles and survives (a JIT
 * or a garbage collector taking a SIGSEGV per write barrier), and it runs
 * first on the app's alternate signal stack, which may be a few KiB.  A
 * handler the app installs decides what happens; if it ends the process
 * through _exit, exit, or by restoring SIG_DFL and raising the signal again
 * (faulthandler does that), one of our other endings sees it.
 */
#include "ending_signals.h"
#include "real_fns.h"
#include "fault_mask.h"
#include "endings.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

/* Every signal whose default action ends the process (signal(7)), except
 * SIGKILL, which cannot be caught, and the real-time signals, which glibc
 * partly uses itself. */
static const struct {
    int sig;
    const char *name;
} ending_set[] = {
    { SIGHUP, "SIGHUP" },       { SIGINT, "SIGINT" },       { SIGQUIT, "SIGQUIT" },
    { SIGILL, "SIGILL" },       { SIGTRAP, "SIGTRAP" },     { SIGABRT, "SIGABRT" },
    { SIGBUS, "SIGBUS" },       { SIGFPE, "SIGFPE" },       { SIGUSR1, "SIGUSR1" },
    { SIGSEGV, "SIGSEGV" },     { SIGUSR2, "SIGUSR2" },     { SIGPIPE, "SIGPIPE" },
    { SIGALRM, "SIGALRM" },     { SIGTERM, "SIGTERM" },     { SIGXCPU, "SIGXCPU" },
    { SIGXFSZ, "SIGXFSZ" },     { SIGVTALRM, "SIGVTALRM" }, { SIGPROF, "SIGPROF" },
    { SIGIO, "SIGIO" },         { SIGSYS, "SIGSYS" },
#ifdef SIGSTKFLT
    { SIGSTKFLT, "SIGSTKFLT" },
#endif
#ifdef SIGPWR
    { SIGPWR, "SIGPWR" },
#endif
};

static struct sigaction app_action[NSIG];   /* what the app reads back */
static unsigned char in_set[NSIG];
static unsigned char ours[NSIG];            /* the kernel has our handler */
static _Atomic int installed;
static _Atomic int table_lock;

static sigaction_fn real_sigaction(void)
{
    return REAL(sigaction, sigaction_fn);
}

const char *ending_signal_name(int sig)
{
    static _Thread_local char text[16];
    for (size_t i = 0; i < sizeof ending_set / sizeof *ending_set; i++)
        if (ending_set[i].sig == sig)
            return ending_set[i].name;
    snprintf(text, sizeof text, "signal %d", sig);
    return text;
}

/* The instruction that faulted runs again when the handler returns: with
 * SIG_DFL back in place it faults again, and the core shows the real fault. */
static int refaults(int sig, const siginfo_t *info)
{
    return info && info->si_code > 0 &&
           (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE);
}

/* The init of a pid namespace (pid 1: a container's first process under
 * `docker run` without --init or a Kubernetes pod, `unshare -pf`) does not
 * die of a signal whose action is the default: the kernel drops it, from
 * its own namespace or an ancestor's (`docker stop`), unless it is a fault
 * (a forced signal), and SIGKILL.  Our handler in place of SIG_DFL made the
 * kernel deliver them: the log ended ("signal SIGTERM") and recording
 * stopped, while the process lived on (a syscall it slept in was even
 * interrupted).  So in init we stand in only for the signals a fault
 * raises, which refault and kill it as they would have; one of those sent
 * by kill() is dropped by our handler as the kernel would have dropped it.
 * getpid() at each look: a forked child may be init of a namespace its
 * parent made (unshare(CLONE_NEWPID), then fork). */
static int is_init(void)
{
    return getpid() == 1;
}

static int fault_signal(int sig)
{
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE;
}

static void die(int sig, int refault)
{
    struct sigaction dfl = { .sa_handler = SIG_DFL };
    sigemptyset(&dfl.sa_mask);
    sigaction_fn real = real_sigaction();
    if (real)
        real(sig, &dfl, NULL);
    if (refault)
        return;
    raise(sig);
    sigset_t just;
    sigemptyset(&just);
    sigaddset(&just, sig);
    own_sigmask(SIG_UNBLOCK, &just, NULL);
}

void ending_signals_die(int sig)
{
    die(sig, 0);
}

static void on_signal(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    int saved_errno = errno;
    int refault = refaults(sig, info);
    if (!refault && is_init()) {
        errno = saved_errno;     /* the kernel drops it with SIG_DFL in place */
        return;
    }
    if (ending_signal(sig, !refault) == ENDING_DEFERRED) {
        errno = saved_errno;
        return;
    }
    die(sig, refault);
    errno = saved_errno;
}

/* What a program reads back after setting act (the kernel drops SIGKILL
 * and SIGSTOP from the mask; glibc adds its restorer). */
static struct sigaction as_read_back(const struct sigaction *act, const struct sigaction *kernel)
{
    struct sigaction a = *act;
    sigdelset(&a.sa_mask, SIGKILL);
    sigdelset(&a.sa_mask, SIGSTOP);
#ifdef SA_RESTORER
    a.sa_flags |= kernel->sa_flags & SA_RESTORER;
    a.sa_restorer = kernel->sa_restorer;
#else
    (void)kernel;
#endif
    return a;
}

/* What the kernel holds after real(sig, &mine, NULL): glibc adds the same
 * restorer to every action, so it is read back once, not once per signal
 * (at start that was 22 system calls of the 200 a traced /bin/true made). */
static struct sigaction mine_read_back;
static int mine_read_back_known;

/* The app's disposition is SIG_DFL (act): ours goes to the kernel.  init:
 * is_init(), asked once by a caller that installs many. */
static int stand_in_as(sigaction_fn real, int sig, const struct sigaction *act, int init)
{
    if (!fault_signal(sig) && init) {
        /* SIG_DFL itself: the kernel drops the signal (is_init). */
        struct sigaction back;
        if (real(sig, act, NULL) != 0 || real(sig, NULL, &back) != 0)
            return -1;
        app_action[sig] = back;
        ours[sig] = 0;
        return 0;
    }
    struct sigaction mine = { .sa_sigaction = on_signal,
                              .sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART };
    sigfillset(&mine.sa_mask);
    if (real(sig, &mine, NULL) != 0)
        return -1;
    if (!mine_read_back_known) {
        struct sigaction back;
        if (real(sig, NULL, &back) != 0)
            return -1;
        mine_read_back = back;
        mine_read_back_known = 1;
    }
    app_action[sig] = as_read_back(act, &mine_read_back);
    ours[sig] = 1;
    return 0;
}

static int stand_in(sigaction_fn real, int sig, const struct sigaction *act)
{
    return stand_in_as(real, sig, act, is_init());
}

/* The table is changed with every signal blocked, so no handler on this
 * thread can come in while the lock is held. */
static void table_enter(sigset_t *saved)
{
    sigset_t all;
    sigfillset(&all);
    own_sigmask(SIG_SETMASK, &all, saved);
    while (atomic_exchange(&table_lock, 1))
        sched_yield();
}

static void table_leave(const sigset_t *saved)
{
    atomic_store(&table_lock, 0);
    own_sigmask(SIG_SETMASK, saved, NULL);
}

void ending_signals_install(void)
{
    sigaction_fn real = real_sigaction();
    if (!real)
        return;
    sigset_t saved;
    table_enter(&saved);
    int init = is_init();   /* once: the pid does not change under the loop */
    for (size_t i = 0; i < sizeof ending_set / sizeof *ending_set; i++) {
        int sig = ending_set[i].sig;
        struct sigaction now;
        if (real(sig, NULL, &now) != 0)
            continue;
        in_set[sig] = 1;
        app_action[sig] = now;
        if (now.sa_handler == SIG_DFL && stand_in_as(real, sig, &now, init) != 0)
            app_action[sig] = now;
    }
    atomic_store(&installed, 1);
    table_leave(&saved);
}

void ending_signals_fork_child(void)
{
    atomic_store(&table_lock, 0);
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    sigaction_fn real = real_sigaction();
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    if (!atomic_load(&installed) || sig <= 0 || sig >= NSIG || !in_set[sig])
        return real(sig, act, old);
    if (!endings_ours()) {
        /* A vfork child shares our memory: leave the table alone.  Its
         * handlers are its own (and reset by its exec). */
        int rc = real(sig, act, old);
        if (rc == 0 && old && ours[sig] && old->sa_sigaction == on_signal)
            *old = app_action[sig];
        return rc;
    }
    sigset_t saved;
    table_enter(&saved);
    int rc = 0;
    if (!ours[sig]) {
        /* The app's own is in the kernel, which answers exactly (and may
         * have reset an SA_RESETHAND handler to SIG_DFL meanwhile). */
        struct sigaction now;
        rc = real(sig, NULL, &now);
        if (rc == 0) {
            app_action[sig] = now;
            if (now.sa_handler == SIG_DFL)
                stand_in(real, sig, &now);
        }
    }
    if (rc == 0 && old)
        *old = app_action[sig];
    if (rc == 0 && act) {
        if (act->sa_handler == SIG_DFL) {
            rc = stand_in(real, sig, act);
        } else {
            rc = real(sig, act, NULL);
            if (rc == 0) {
                struct sigaction back;
                app_action[sig] = real(sig, NULL, &back) == 0 ? back : *act;
                ours[sig] = 0;
            }
        }
    }
    table_leave(&saved);
    return rc;
}

sighandler_t signal(int sig, sighandler_t handler)
{
    /* glibc's signal(): BSD semantics, the signal blocked in its handler. */
    struct sigaction act = { .sa_handler = handler, .sa_flags = SA_RESTART }, old;
    sigemptyset(&act.sa_mask);
    if (sig > 0 && sig < NSIG)
        sigaddset(&act.sa_mask, sig);
    if (sigaction(sig, &act, &old) != 0)
        return SIG_ERR;
    return old.sa_handler;
}
