/*
 * warn.h - the tracer's only voice: one line on stderr, "trace: ...".
 *
 * Written with write(2) from a stack buffer, never stdio: a warning may come
 * from a signal handler, a forked child or a thread that interrupted the app
 * inside printf, where stdio's lock can be held.
 */
#ifndef TRACE_WARN_H
#define TRACE_WARN_H

/* Printed unless TRACE_QUIET=1. */
void trace_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
