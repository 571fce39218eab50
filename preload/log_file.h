/*
 * log_file.h - the file a log goes to.
 *
 * No descriptor is kept: each frame is compressed in memory, then the file
 * is opened by its path, checked to be the very file we created (device and
 * inode), appended to and closed, by the flusher's helper in a descriptor
 * table of its own where there is one, and otherwise with every write and
 * close checked against the program's reuse of the number
 * (private_files.h).  So the program never sees a descriptor of ours while
 * it runs (a child listing its descriptors, a daemon closing them all and
 * opening its own on the same numbers), and we never write through a number
 * the program reused.  Created on the first write, so a process that execs
 * before recording anything leaves no empty log behind.  Writes happen
 * under the flusher's token, and warnings are given here, on the caller's
 * thread (the helper's stderr is not the program's).
 */
#ifndef TRACE_LOG_FILE_H
#define TRACE_LOG_FILE_H

#include <stdint.h>
#include <sys/types.h>
#include "trace_format.h"

/* zstd level of every frame: the flusher shares the CPU with the app, and
 * the log is small anyway because stacks and strings are written once. */
#define LOG_COMPRESSION_LEVEL 1

/* Compress c into one frame and append it.  0 when written; -EAGAIN when
 * the file could not be opened for now (the process is out of descriptors:
 * keep c and try again later); on any other failure (bad path, full disk,
 * the file replaced) warn (once in a fork family, under warn.h's rule),
 * stop the recorder and return -1, and every later call returns -1 at
 * once.  A write that failed after whole frames went in (a full disk, a
 * file size limit, an I/O error) leaves the log a last frame saying so
 * (INFO not_watched "the rest of the run: cannot write ..."), in place of
 * the frame that did not fit, where that frame's bytes make room for it. */
int log_write(const tf_chunk *c, void *cctx);

/* The current segment's size so far, and cutting it back to that size
 * (exec: the END written before the call is taken back when it fails). */
off_t log_size(void);
void log_truncate(off_t size);

/* Segments (TRACE_MAX_BYTES; FORMAT.md section 13).  The log is kept as its
 * first segment (its own path, never deleted: the start of the run, and the
 * name that says the log exists) and its newest segments.  Once the current
 * segment holds an eighth of the budget, log_rotation_due names the next
 * segment: the flusher then seals with a restatement of every definition
 * (rec_seal_restate), writes the sealed frame to the current segment, and
 * log_rotate starts the next one with the restatement and deletes the
 * oldest segments after the first until the files fit the budget (plus one
 * frame).  Only files this process created are deleted (device and inode
 * checked), by name, with no descriptor kept.  With a budget, the log's
 * name is one beside which no segment file of that name is (another run's:
 * the name is taken, the next free one used), so every segment's name is
 * free when its turn comes; one taken all the same (made since) leaves the
 * log in its current segment. */
uint32_t log_rotation_due(void);
/* At start: frames small enough for the segments (rec_set_frame_bytes). */
void log_configure(void);
/* 0, or -1 when the segment could not be started (the log then goes on in
 * the current one, past the budget, after one warning). */
int log_rotate(const tf_chunk *restated, void *cctx);
/* The writer could not restate its definitions (out of memory): warn once
 * and keep writing to the current segment. */
void log_rotation_impossible(void);

/* The log's name (its first segment's file) once it exists, else the name
 * it would get first. */
const char *log_path(void);

/* In a forked child: the parent's file stays the parent's. */
void log_fork_child(void);

int log_failed(void);

#endif
