/*
 * endings.h - every way a process ends leaves a whole log.
 *
 *   exit(), return from main   the destructor (start.c)       ending "exit"
 *   _exit(), _Exit()           interposed (exit_exec.c)       ending "_exit STATUS"
 *   exec*()                    interposed (exit_exec.c)       ending "exec PATH"
 *   a signal whose action is the default, by the same signal  ending "signal NAME"
 *     (ending_signals.c)
 *   a sanitizer's report       its death callback             ending "sanitizer"
 *
 * Each writes an INFO record `ending`, then the END event, and flushes,
 * on a stack of our own (own_stack.h).  A process that recorded nothing
 * writes nothing.  One thread ends the process; another that tries
 * meanwhile waits for it.  An exec writes END before the call and takes it
 * back if the call fails, so the log goes on as if it had not been tried.
 */
#ifndef TRACE_ENDINGS_H
#define TRACE_ENDINGS_H

#include <stdatomic.h>

/* At start, and in a forked child. */
void endings_init(void);
void endings_fork_child(void);

/* 0 in a child made by vfork (or clone with shared memory) that has not
 * exec'd yet: it shares our memory, and must not touch the recorder. */
int endings_ours(void);

void ending_exit(void);
void ending__exit(int status);

/* Returns 1 when END was written (or tried): call ending_exec_failed if the
 * exec returns. */
int ending_exec_begin(const char *path);
void ending_exec_failed(void);

/* From a signal handler, for a signal about to kill the process (ending
 * "signal NAME").  async: sent (not a fault of this thread's instruction).
 * Returns ENDING_DEFERRED when the handler interrupted this thread inside
 * the recorder or a flush: the log cannot be finished from here, and the
 * interrupted code finishes it (and dies of sig) as soon as it lets go. */
enum { ENDING_DIE, ENDING_DEFERRED };
int ending_signal(int sig, int async);

/* The deferred case: checked where the recorder's lock or the flusher's
 * token is released. */
extern _Atomic int ending_deferred_sig;
void ending_run_deferred(void);
static inline void ending_check_deferred(void)
{
    if (__builtin_expect(atomic_load_explicit(&ending_deferred_sig, memory_order_relaxed) != 0, 0))
        ending_run_deferred();
}

#endif
