/*
 * fatal_signals.h - flush the log when the process dies of SIGSEGV, SIGBUS,
 * SIGABRT or SIGFPE, then let the app's handler or the default action run.
 */
#ifndef TRACE_FATAL_SIGNALS_H
#define TRACE_FATAL_SIGNALS_H

/* Install our handlers, remembering what was there (the app's, ASan's,
 * the default) to chain to. */
void fatal_signals_install(void);

#endif
