/*
 * flusher.h - getting encoded records into the file: a background thread
 * every 100 ms or when a chunk is full, and synchronous flushes at exit and
 * on fatal signals.
 */
#ifndef TRACE_FLUSHER_H
#define TRACE_FLUSHER_H

/* The thread starts with the first event of a process (and of a forked
 * child), not in the constructor: a program that only forks and execs never
 * gets one. */
void flusher_ensure_started(void);

/* A chunk is full: wake the thread now. */
void flusher_kick(void);

/* Seal and write everything encoded so far, on this thread.  from_signal:
 * called from a fatal-signal handler; waits a bounded time for a flush in
 * progress on another thread and gives up if this thread is the one
 * flushing.  Returns 0 when the data reached the file. */
int flush_now(int from_signal);

/* Stop the thread (the next event starts it again).  At exit and before
 * fork the caller then flushes on its own thread. */
void flusher_stop(void);

/* In a forked child: the thread did not come along. */
void flusher_fork_child(void);

#endif
