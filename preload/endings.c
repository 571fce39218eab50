/*
 * endings.c - the one place where a log is finished (see endings.h).
 */
#include "endings.h"
#include "config.h"
#include "dl_hooks.h"
#include "ending_signals.h"
#include "fault_mask.h"
#include "flusher.h"
#include "log_file.h"
#include "own_stack.h"
#include "proc_stat.h"
#include "recorder.h"
#include "recorder_core.h"
#include "warn.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

/* Waiting for another thread that is ending the process: long enough for a
 * flush, short enough that a stuck one cannot hang the exit. */
#define OTHER_WAIT_MS 2000

_Atomic int ending_deferred_sig;
static _Atomic pid_t owner;          /* thread ending the process, 0 none */
static _Atomic int ended;            /* END is written (or nothing to write) */
/* An exec's END is written and its call under way: it may still fail and
 * take END back, so the process is not ended yet for another ending. */
static _Atomic int exec_in_flight;
/* Threads ending the process for good (exit, _exit, a signal...) waiting
 * for another's ending: an exec waits for them, not they for a new exec. */
static _Atomic int enders_waiting;
static _Atomic pid_t our_pid;

int endings_ours(void)
{
    return (pid_t)syscall(SYS_getpid) == atomic_load_explicit(&our_pid, memory_order_relaxed);
}

enum { CLAIMED, NESTED, OTHER };

/* Become the thread that ends the process (for_exec: for an exec, which
 * may fail and give the process back).
 *
 * Another thread's exec that may still fail has not ended the process:
 * an exit waits for it (the exec succeeds and the exit never returns, or
 * it fails, takes its END back and lets go), and does not leave while it
 * is under way.  Before, an exit that found the exec's END written took it
 * for its own and left: the log ended "exec PATH" where the process had
 * exited, or, when the exec failed meanwhile and took its END back, with
 * no END.  An exec that finds an ending waiting lets it go first: a thread
 * failing exec after exec would otherwise take the process back each time
 * between two looks of the waiting one. */
static int claim(int for_exec)
{
    pid_t me = rec_tid();
    if (atomic_load(&owner) == me)
        return NESTED;   /* a crash inside our own ending, or an ending inside one */
    if (!for_exec)
        atomic_fetch_add(&enders_waiting, 1);
    int rc = OTHER;
    struct timespec ms = { 0, 1000000 };
    for (int waited = 0; waited < OTHER_WAIT_MS; waited++) {
        pid_t expected = 0;
        if ((!for_exec || !atomic_load(&enders_waiting)) &&
            atomic_compare_exchange_strong(&owner, &expected, me)) {
            rc = CLAIMED;
            break;
        }
        if (atomic_load(&ended) && !atomic_load(&exec_in_flight))
            break;
        nanosleep(&ms, NULL);
    }
    if (!for_exec)
        atomic_fetch_sub(&enders_waiting, 1);
    return rc;
}

static void say_end(const char *how)
{
    if (log_failed() || !trace_may_speak())
        return;   /* said once already, or not asked: the app's stderr is the app's */
    char also[64] = "";
    if (strcmp(how, "exit") != 0)
        snprintf(also, sizeof also, " (%.60s)", how);
    uint64_t dropped = rec_dropped_count();
    if (dropped)
        trace_warn("%llu events -> %s%s (%llu dropped: recorded from a signal handler inside the "
                   "recorder)",
                   (unsigned long long)rec_event_count(), log_path(), also,
                   (unsigned long long)dropped);
    else
        trace_warn("%llu events -> %s%s", (unsigned long long)rec_event_count(), log_path(), also);
}

/* How the log ends, formatted on our own stack (snprintf alone takes more
 * of the app's stack than we allow ourselves). */
struct how {
    const char *what;       /* "exit", "_exit", "signal", "exec", ... */
    const char *arg;        /* or NULL */
    int num, has_num;
};

static void format_how(const struct how *h, char *out, size_t cap)
{
    if (h->has_num)
        snprintf(out, cap, "%s %d", h->what, h->num);
    else if (h->arg)
        snprintf(out, cap, "%s %s", h->what, h->arg);
    else
        snprintf(out, cap, "%s", h->what);
}

/* The mask of the thread ending the process from before hold_signals:
 * one thread at a time owns the ending (claim; the mask is put back before
 * the claim is let go), and it is kept here, not on the app's stack (see
 * release_here). */
static sigset_t mask_before_hold;

/* While the log's end is flushed, the signals a program may send stay
 * pending on the thread that flushes it; the faults (and the traps a
 * debugger or seccomp raise) cannot wait.  A signal that landed there was
 * noted for the ending to act on when it let go (ending_signal), which
 * needs the handler to return to it: Go's runtime handler restores
 * SIG_DFL, raises again and, when that does not kill, exits with status 2
 * (dieFromSignal), never returning.  A SIGTERM during a cgo program's
 * exit() or _exit() flush ended it with status 2 and no log, where bare
 * it died of SIGTERM.  Held back instead, it comes once the log is whole
 * (ended), and whoever handles it, it kills. */
static void hold_signals(sigset_t *saved)
{
    sigset_t held;
    sigfillset(&held);
    static const int cannot_wait[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS };
    for (size_t i = 0; i < sizeof cannot_wait / sizeof *cannot_wait; i++)
        sigdelset(&held, cannot_wait[i]);
    own_sigmask(SIG_BLOCK, &held, saved);
}

static void release_signals(const sigset_t *saved)
{
    own_sigmask(SIG_SETMASK, saved, NULL);
}

/* Holding and releasing both run on our own stack, the mask kept out of
 * the app's stack too: an exec from the app's signal handler may have
 * only the alternate stack the app sized for its own handler, and the
 * mask calls there took 2688 bytes more of it in the sanitizer build
 * (cuda.altstack allows 512). */
static void release_here(void *unused)
{
    (void)unused;
    release_signals(&mask_before_hold);
}

struct finish {
    struct how how;
    int at_exit;         /* exit(): the flusher thread writes the end (flusher_stop_for_exit) */
    int held;            /* signals held from END on (hold_signals), mask_before_hold */
};

/* On our own stack: INFO `ending`, END, everything to the file. */
static void finish(void *arg)
{
    struct finish *f = arg;
    if (rec_event_count() == 0 || !rec_active())
        return;   /* nothing recorded: no log (or it failed, and said so) */
    char how[4096 + 16];
    /* A signal sent while this thread got here waits (ending_signal) and
     * ends the process once the log is whole: the log says so.  One sent
     * after END is written leaves the ending as it was. */
    int sig = atomic_load(&ending_deferred_sig);
    if (sig)
        format_how(&(struct how){ .what = "signal", .arg = ending_signal_name(sig) }, how, sizeof how);
    else
        format_how(&f->how, how, sizeof how);
    rec_end(how);
    hold_signals(&mask_before_hold);
    f->held = 1;
    if (f->at_exit)
        flusher_stop_for_exit();
    flush_final(!f->at_exit);
    say_end(how);
}

/* This thread is ending the process (finish, an exec's flush). */
static int ending_here(void)
{
    return atomic_load(&owner) == rec_tid();
}

/* A signal sent while this thread was ending the process waited for the
 * log to be whole (ending_signal): it is the process's end now. */
static void die_of_deferred(void)
{
    int sig = atomic_exchange(&ending_deferred_sig, 0);
    if (sig)
        ending_signals_die(sig);
}

static void end_as(struct how how, int at_exit)
{
    if (!endings_ours() || claim(0) != CLAIMED)
        return;
    struct finish f = { .how = how, .at_exit = at_exit };
    own_stack_run(finish, &f);
    atomic_store(&ended, 1);
    if (f.held)
        own_stack_run(release_here, NULL);   /* one held back kills now */
    die_of_deferred();
}

void ending_exit(void)
{
    end_as((struct how){ .what = "exit" }, 1);
}

void ending__exit(int status)
{
    end_as((struct how){ .what = "_exit", .num = status, .has_num = 1 }, 0);
}

/* Sanitizers end a process through their own exit, not exit(): ASan's
 * report, UBSan's halt_on_error.  Their death callback is our way in. */
static void on_sanitizer_death(void)
{
    end_as((struct how){ .what = "sanitizer" }, 0);
}

struct exec_arg { const char *path; int held; };

static void exec_begin_here(void *arg)
{
    struct exec_arg *a = arg;
    hold_signals(&mask_before_hold);   /* released before the exec: the new image gets the mask as it was */
    char how[4096 + 16];
    format_how(&(struct how){ .what = "exec", .arg = a->path ? a->path : "?" }, how, sizeof how);
    a->held = flush_exec_begin(how);
}

static void exec_failed_here(void *arg)
{
    (void)arg;
    flush_exec_failed();
}

int ending_exec_begin(const char *path)
{
    if (!endings_ours() || rec_event_count() == 0 || !rec_active())
        return 0;
    if (claim(1) != CLAIMED)
        return 0;
    struct exec_arg a = { path, 0 };
    own_stack_run(exec_begin_here, &a);
    if (!a.held) {
        own_stack_run(release_here, NULL);   /* before another thread may claim */
        atomic_store(&owner, 0);
        return 0;
    }
    atomic_store(&exec_in_flight, 1);
    atomic_store(&ended, 1);   /* a signal from here on can die at once: the log is whole */
    own_stack_run(release_here, NULL);   /* one held back during the flush kills now */
    die_of_deferred();         /* one noted during the flush: the log says exec, and is whole */
    return 1;
}

void ending_exec_failed(void)
{
    atomic_store(&ended, 0);
    own_stack_run(exec_failed_here, NULL);
    atomic_store(&owner, 0);
    atomic_store(&exec_in_flight, 0);
}

static void end_by_signal(int sig)
{
    end_as((struct how){ .what = "signal", .arg = ending_signal_name(sig) }, 0);
}

/* A signal sent to the thread that is ending the process waits, as one
 * inside the recorder does: dying at once left the END just written in
 * memory (a SIGTERM during exit's flush: no log, or one without END).
 * Once END is written it is held back instead (hold_signals).  A fault
 * there (a crash inside our own ending) cannot wait. */
int ending_signal(int sig, int async)
{
    if (!endings_ours() || atomic_load(&ended))
        return ENDING_DIE;
    if (async && (ending_here() || rec_lock_held_here() || flusher_token_held_here())) {
        atomic_store(&ending_deferred_sig, sig);
        return ENDING_DEFERRED;
    }
    end_by_signal(sig);
    return ENDING_DIE;
}

void ending_run_deferred(void)
{
    if (rec_lock_held_here() || flusher_token_held_here() || ending_here())
        return;   /* not let go of everything yet: the outer release (or end_as) runs it */
    int sig = atomic_exchange(&ending_deferred_sig, 0);
    if (!sig)
        return;
    end_by_signal(sig);
    ending_signals_die(sig);
}

/* quick_exit runs its handlers, last registered first, then _exit inside
 * libc, past our _exit: registered at start, ours runs last. */
static void on_quick_exit(void)
{
    end_as((struct how){ .what = "quick_exit" }, 0);
}

void endings_init(void)
{
    atomic_store(&our_pid, (pid_t)syscall(SYS_getpid));
    own_stack_init();
    at_quick_exit(on_quick_exit);
    void (*set_death_callback)(void (*)(void)) =
        (void (*)(void (*)(void)))dl_real_dlsym(RTLD_DEFAULT, "__sanitizer_set_death_callback");
    if (set_death_callback)
        set_death_callback(on_sanitizer_death);
}

void endings_fork_child(void)
{
    atomic_store(&our_pid, (pid_t)syscall(SYS_getpid));
    atomic_store(&owner, 0);
    atomic_store(&ended, 0);
    atomic_store(&exec_in_flight, 0);
    atomic_store(&enders_waiting, 0);
    atomic_store(&ending_deferred_sig, 0);
}
