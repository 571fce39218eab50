/*
 * endings.c - the one place where a log is finished (see endings.h).
 */
#include "endings.h"
#include "config.h"
#include "dl_hooks.h"
#include "ending_signals.h"
#include "flusher.h"
#include "log_file.h"
#include "own_stack.h"
#include "proc_stat.h"
#include "recorder.h"
#include "recorder_core.h"
#include "warn.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

/* finish() has written END and let go of the recorder's lock: what is left
 * of the ending is flushing it, which a signal handler interrupting that
 * thread can do itself (signal_finishes).  end_how is finish()'s text,
 * on its stack, which waits under the handler. */
static _Atomic int end_in_buffer;
static const char *end_how;
static int end_at_exit;

struct finish {
    struct how how;
    int at_exit;         /* exit(): the flusher thread writes the end (flusher_stop_for_exit) */
};

/* On our own stack: INFO `ending`, END, everything to the file. */
static void finish(void *arg)
{
    const struct finish *f = arg;
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
    end_how = how;
    end_at_exit = f->at_exit;
    atomic_store(&end_in_buffer, 1);
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
    struct finish f = { how, at_exit };
    own_stack_run(finish, &f);
    atomic_store(&ended, 1);
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
        atomic_store(&owner, 0);
        return 0;
    }
    atomic_store(&exec_in_flight, 1);
    atomic_store(&ended, 1);   /* a signal from here on can die at once: the log is whole */
    die_of_deferred();         /* one sent during the flush: the log says exec, and is whole */
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

/* Bounded as finish() bounds it: at exit the token's holder is the
 * flusher in its last flush, waited for as long as it takes. */
static void final_flush_here(void *arg)
{
    (void)arg;
    flush_final(!end_at_exit);
    say_end(end_how ? end_how : "exit");
}

/* A signal on the thread that is ending the process, once END is written
 * and neither the recorder's lock nor the flusher's token is held here:
 * the flush is made from the handler, then the signal kills.  Deferring
 * it (returning to let the ending finish) relied on the handler's return:
 * a program's handler that restores SIG_DFL and raises again, and exits
 * when that did not kill, never returns there.  Go's runtime does that
 * (dieFromSignal: raise twice, then exit(2)): a SIGTERM that came during
 * a cgo program's exit() flush ended it with status 2 and no log, where
 * bare it died of SIGTERM.  own_stack's stack is the interrupted
 * finish()'s, so the flush runs on one mapped here (this process ends
 * now: it is not given back).  0 where it cannot be had: deferred then. */
static int signal_finishes(void)
{
    if (!ending_here() || !atomic_load(&end_in_buffer) || rec_lock_held_here() ||
        flusher_token_held_here())
        return 0;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), size = 256u * 1024;
    char *map = mmap(NULL, size + page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED)
        return 0;
    mprotect(map, page, PROT_NONE);   /* guard page below */
    trace_run_on_stack(final_flush_here, NULL, map + page + size);
    atomic_store(&ended, 1);
    return 1;
}

/* A signal sent to the thread that is ending the process waits, as one
 * inside the recorder does: dying at once left the END just written in
 * memory (a SIGTERM during exit's flush: no log, or one without END).
 * Once only the flush is left, the handler makes it (signal_finishes).
 * A fault there (a crash inside our own ending) cannot wait. */
int ending_signal(int sig, int async)
{
    if (!endings_ours() || atomic_load(&ended))
        return ENDING_DIE;
    if (async && (ending_here() || rec_lock_held_here() || flusher_token_held_here())) {
        if (signal_finishes())
            return ENDING_DIE;
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
    atomic_store(&end_in_buffer, 0);
}
