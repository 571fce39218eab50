/*
 * warn.h - the tracer's only voice: one line on stderr, "trace: ...".
 *
 * Written with write(2) from a stack buffer, never stdio: a warning may come
 * from a signal handler, a forked child or a thread that interrupted the app
 * inside printf, where stdio's lock can be held.
 */
#ifndef TRACE_WARN_H
#define TRACE_WARN_H

/* Printed unless TRACE_QUIET=1: what the user must hear wherever stderr
 * goes (the log cannot be written, a setting does not parse); never once
 * descriptor 2 is no longer the file it was at start (a daemon's data). */
void trace_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Where the line at the end of the process goes (TRACE_EXIT_LINE): 1 when
 * it is 1, or auto and stderr is the terminal of the program that started
 * this process.  trace_voice_init reads that program's terminal, at start. */
void trace_voice_init(void);
int trace_may_speak(void);

/* Printed only where trace_may_speak (and not TRACE_QUIET=1): what the log
 * says too, and a program whose stderr is its data must not see. */
void trace_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
