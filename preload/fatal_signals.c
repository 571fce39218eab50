/*
 * fatal_signals.c - our handler stays installed for the four fatal signals;
 * the app's own handlers are kept in a table and called from ours.
 *
 * sigaction() and signal() are interposed for those four signals so that a
 * handler the app installs after us (Python's faulthandler, a crash
 * reporter) goes into the table instead of replacing ours, and the app reads
 * back exactly what it set.  Other signals go straight to libc.
 */
#include "fatal_signals.h"
#include "dl_hooks.h"
#include "flusher.h"
#include "recorder.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static const int fatal[] = { SIGSEGV, SIGBUS, SIGABRT, SIGFPE };
static struct sigaction app_action[NSIG];   /* what the app believes is installed */
static _Atomic int installed;

static sigaction_fn real_sigaction(void)
{
    static sigaction_fn _Atomic real;
    sigaction_fn fn = atomic_load(&real);
    if (!fn) {
        fn = (sigaction_fn)dl_real_dlsym(RTLD_NEXT, "sigaction");
        atomic_store(&real, fn);
    }
    return fn;
}

static int is_fatal(int sig)
{
    for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++)
        if (fatal[i] == sig)
            return 1;
    return 0;
}

/* Run what the app (or whoever came before us) wanted for this signal. */
static void chain(int sig, siginfo_t *info, void *uctx)
{
    struct sigaction a = app_action[sig];
    if (a.sa_flags & SA_RESETHAND) {
        memset(&app_action[sig], 0, sizeof app_action[sig]);
        app_action[sig].sa_handler = SIG_DFL;
    }
    if (a.sa_handler == SIG_IGN)
        return;
    if (a.sa_handler == SIG_DFL) {
        /* Die as the app would have: the default action, for this signal.
         * It is blocked while we run, so it lands when we return. */
        struct sigaction dfl = { .sa_handler = SIG_DFL };
        real_sigaction()(sig, &dfl, NULL);
        raise(sig);
        return;
    }
    sigset_t old;
    pthread_sigmask(SIG_BLOCK, &a.sa_mask, &old);
    if (a.sa_flags & SA_SIGINFO)
        a.sa_sigaction(sig, info, uctx);
    else
        a.sa_handler(sig);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Every time, not once: an app may recover from a fault (a guard page, a
 * JIT) and die of a later one. */
static void on_fatal_signal(int sig, siginfo_t *info, void *uctx)
{
    if (rec_active()) {
        rec_info("fatal_signal", sig == SIGSEGV ? "SIGSEGV"
                                 : sig == SIGBUS ? "SIGBUS"
                                 : sig == SIGABRT ? "SIGABRT"
                                                  : "SIGFPE");
        flush_now(1);
    }
    chain(sig, info, uctx);
}

void fatal_signals_install(void)
{
    sigaction_fn real = real_sigaction();
    if (!real)
        return;
    struct sigaction ours = { .sa_sigaction = on_fatal_signal,
                              .sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART };
    sigemptyset(&ours.sa_mask);
    for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++)
        real(fatal[i], &ours, &app_action[fatal[i]]);
    atomic_store(&installed, 1);
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    sigaction_fn real = real_sigaction();
    if (!atomic_load(&installed) || !is_fatal(sig))
        return real ? real(sig, act, old) : -1;
    if (old)
        *old = app_action[sig];
    if (act)
        app_action[sig] = *act;
    return 0;
}

sighandler_t signal(int sig, sighandler_t handler)
{
    struct sigaction act = { .sa_handler = handler, .sa_flags = SA_RESTART }, old;
    sigemptyset(&act.sa_mask);
    if (sigaction(sig, &act, &old) != 0)
        return SIG_ERR;
    return old.sa_handler;
}
