/*
 * recorder_core.h - the recorder's side door, for the parts of the tracer
 * that run it rather than feed it: start-up, the flusher, module tracking,
 * fork handling and exit.  Hooks use recorder.h only.
 */
#ifndef TRACE_RECORDER_CORE_H
#define TRACE_RECORDER_CORE_H

#include <stdint.h>
#include <sys/types.h>
#include "trace_format.h"

/* Chunks are handed to the flusher once this much is encoded. */
#define REC_SEAL_BYTES (256u * 1024u)
/* Should the flusher fall this far behind (a stalled disk, a thread starved
 * of CPU by a busy app), the recording thread flushes itself: the app slows
 * down rather than lose the log.  It also keeps frames small, and a kill -9
 * loses at most the frame being written (frames may not exceed 64 MiB). */
#define REC_FLUSH_NOW_BYTES (1024u * 1024u)

/* A log kept within a byte budget (TRACE_MAX_BYTES) rotates segments only
 * between frames: smaller segments need smaller frames.  Seal at `seal`
 * bytes and flush on the recording thread at `flush_now` (at most the
 * defaults above). */
void rec_set_frame_bytes(size_t seal, size_t flush_now);

/* CLOCK_MONOTONIC in ns, rounded down to the log's time unit
 * (TRACE_TIME_UNIT_NS), for a log header's start: no later event's time is
 * below it.  Not while other threads record (start-up, a fork child). */
uint64_t rec_clock_ns(void);

/* Start recording into a new writer whose first record is h.  0 or -1. */
int rec_start(const tf_header *h);

/* Record INFO `ending` = how, then END (the writer fills its counts);
 * every later event is dropped. */
void rec_end(const char *how);

/* exec (flusher.c): take the lock and keep it, so no thread records while
 * the exec is under way; seal what is pending into *pending, then INFO
 * `ending` and END into *end.  If the exec fails, rec_exec_failed puts the
 * writer back where it was before END (the caller cut that frame off the
 * file) and lets the threads record again.  pending NULL: a frame sealed
 * before still waits for the file (the caller's only copy of it, which
 * nothing sealed after it may overtake): take the lock alone, and seal and
 * write nothing; rec_exec_failed then leaves the writer as it is. */
void rec_exec_begin(const char *how, tf_chunk *pending, tf_chunk *end);
void rec_exec_failed(void);

/* Does this thread hold the recorder's lock (a signal handler interrupted
 * it inside the recorder)? */
int rec_lock_held_here(void);

/* Stop recording for good (the log cannot be written). */
void rec_stop(void);

/* Move what was encoded since the last seal into *out (see tf_writer_seal).
 * Returns the number of bytes handed over. */
size_t rec_seal(tf_chunk *out);
/* The same, and under the same lock (so nothing is encoded in between) the
 * opening of segment `segment` into *restated (tf_writer_restate); its len
 * is 0 when the writer could not restate. */
size_t rec_seal_restate(tf_chunk *out, uint32_t segment, tf_chunk *restated);

/* Run fn with the writer under the recorder's lock, if recording: for
 * definitions that are not events (modules).  fn must not call out. */
void rec_define(void (*fn)(tf_writer *w, void *arg), void *arg);
/* Inside rec_define's fn: a module was unloaded, so native stack ids known
 * so far (the writer's table, every thread's memos) are not to be used
 * again (tf_writer_forget_native_stacks says why). */
void rec_native_stacks_stale(tf_writer *w);

/* Events recorded so far, and events dropped (recorded from a signal handler
 * that interrupted its own thread inside the recorder). */
uint64_t rec_event_count(void);
uint64_t rec_dropped_count(void);

/* The calling thread's kernel id, cached (reset in a forked child). */
pid_t rec_tid(void);

/* fork(): the prepare handler takes the lock so the child starts from a
 * consistent writer; the child then throws the parent's writer away
 * (its unflushed data belongs to the parent's log) and starts a new one. */
void rec_fork_prepare(void);
void rec_fork_parent(void);
void rec_fork_child(const tf_header *h);

#endif
