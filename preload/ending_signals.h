/*
 * ending_signals.h - dying of a signal leaves a whole log.
 *
 * For every signal whose default action ends the process (SIGINT, SIGTERM,
 * SIGHUP, SIGPIPE, SIGSEGV, SIGABRT, ...), our handler is installed exactly
 * while the app's disposition is SIG_DFL.  It finishes the log (endings.h),
 * puts SIG_DFL back and lets the signal kill the process as it would have:
 * same signal, same exit status, a core where there would have been one.
 * sigaction() and signal() are interposed for these signals so the app
 * reads back exactly what it set, and a handler or SIG_IGN the app sets goes
 * to the kernel as it is: then our code is not in the way at all (a JIT's
 * guard-page faults, CPython's SIGINT handler, faulthandler).
 */
#ifndef TRACE_ENDING_SIGNALS_H
#define TRACE_ENDING_SIGNALS_H

/* At start: take over the signals whose disposition is SIG_DFL. */
void ending_signals_install(void);

/* In a forked child: the table's lock may have been held by another thread
 * of the parent. */
void ending_signals_fork_child(void);

/* "SIGTERM", or "signal N". */
const char *ending_signal_name(int sig);

/* Die of sig by its default action now (endings.c's deferred case). */
void ending_signals_die(int sig);

#endif
