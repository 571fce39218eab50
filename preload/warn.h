/*
 * warn.h - the tracer's only voice: one line on stderr, "trace: ...".
 *
 * Written with write(2) from a stack buffer, never stdio: a warning may come
 * from a signal handler, a forked child or a thread that interrupted the app
 * inside printf, where stdio's lock can be held.
 *
 * One rule for every line (docs/guarantees.md, Output): a line is written
 * only where trace_may_speak (stderr is the terminal of the program that
 * started this process, or TRACE_EXIT_LINE=1), never under TRACE_QUIET=1,
 * and never once descriptor 2 is no longer the file it was at start (a
 * daemon's data).  A program whose parent reads its stderr (a pipe, a
 * file: subprocess.run(capture_output=True), pytest's capfd, a suite that
 * wants stderr empty) must not find us there.  What a user must learn
 * wherever stderr goes is written into the log as well (trace_warn_log; the
 * log's own failures: log_file.c), where there is a log.
 */
#ifndef TRACE_WARN_H
#define TRACE_WARN_H

/* The line, under the rule above.  Before trace_voice_init (a setting read
 * at start) it is kept, and said or not there. */
void trace_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The same line, and the log gets it too: INFO `warning` with the line's
 * text (without "trace: "), TRACE_QUIET or not.  Before the recorder has
 * started the text is kept (the first few) for trace_warnings_to_log. */
void trace_warn_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* After the recorder started (and in a forked child's new log): the
 * warnings given before, as INFO `warning` records. */
void trace_warnings_to_log(void);

/* Whether a line may be written (TRACE_EXIT_LINE): 1 when it is 1, or auto
 * and stderr is the terminal of the program that started this process.
 * trace_voice_init reads that program's terminal and what stderr is, once,
 * at start, then says the lines kept until then. */
void trace_voice_init(void);
int trace_may_speak(void);

#endif
