/*
 * flusher.h - getting encoded records into the file: a background thread
 * every 100 ms or when a chunk is full, and synchronous flushes when the
 * process ends (endings.c).
 */
#ifndef TRACE_FLUSHER_H
#define TRACE_FLUSHER_H

/* At start: the compressor, with all the memory it will ever use (a flush
 * from a signal handler that interrupted malloc must not call malloc). */
void flusher_init(void);

/* The thread starts with the first event of a process (and of a forked
 * child), not in the constructor: a program that only forks and execs never
 * gets one. */
void flusher_ensure_started(void);
/* 1 when flusher_ensure_started has nothing to do (a leaf's test: the
 * recorder's py_free_fast calls nothing on its way). */
int flusher_is_started(void);

/* A chunk is full: wake the thread now. */
void flusher_kick(void);
/* 1 while a kick waits for the thread to take it (flusher_kick would do
 * nothing): a leaf's test, as flusher_is_started. */
int flusher_kicked(void);

/* Seal and write everything encoded so far, on this thread.  bounded: waits
 * a bounded time for a flush in progress on another thread and gives up if
 * this thread is the one flushing (it was interrupted by a signal handler).
 * Returns 0 when the data reached the file. */
int flush_now(int bounded);

/* The process's last flush (its ending): flush_now, and when no descriptor
 * is free (a program at its RLIMIT_NOFILE), once more with the soft limit
 * raised a little for that write alone, where the hard limit allows; if the
 * log still cannot be opened, one warning says so. */
int flush_final(int bounded);

/* Does this thread hold the write token (a signal handler interrupted it
 * inside a flush)? */
int flusher_token_held_here(void);

/* exec: write everything, then INFO `ending` and END in a frame of their
 * own, and keep the token and the recorder's lock (recorder_core.h) until
 * flush_exec_failed, which cuts that frame off the file again and lets
 * recording go on.  With no descriptor free its writes get the room
 * flush_final's get; a frame the file still cannot take is kept for a
 * later flush, as flush_now keeps it, nothing is written after it, and one
 * warning says the log ends there if the exec succeeds.  Returns 1 when it
 * holds them (call flush_exec_failed if the exec returns), 0 when this
 * thread was already writing. */
int flush_exec_begin(const char *how);
void flush_exec_failed(void);

/* Stop the thread (the next event starts it again).  Its last act is a
 * flush of what is pending, through its helper's descriptor table
 * (private_files.h); at exit and before fork the caller then flushes what
 * came after, on its own thread. */
void flusher_stop(void);

/* exit(): the same last flush, waited for, but the thread and its helper
 * are neither stopped nor joined: they wait for the process's end, and no
 * thread starts again (a fork after this: the child starts its own). */
void flusher_stop_for_exit(void);

/* fork_prepare: stop the thread and start none until flusher_release
 * (fork_parent) or flusher_fork_child (the child). */
void flusher_hold(void);
void flusher_release(void);

/* In a forked child: the thread did not come along. */
void flusher_fork_child(void);

#endif
