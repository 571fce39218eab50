/*
 * log_file.h - the file a log goes to.
 *
 * Created on the first write, so a process that execs before recording
 * anything leaves no empty log behind.  The descriptor number is reserved at
 * start, high above the numbers the app uses (fds.h), and the file takes that
 * number when it is created: the app never sees our descriptors come or go.
 * Every write first checks that the number still refers to our file (a raw
 * close_range or dup2 system call may have handed it to the app); if not, the
 * file is reopened by its path.  Writes happen under the flusher's token.
 */
#ifndef TRACE_LOG_FILE_H
#define TRACE_LOG_FILE_H

#include <stdint.h>
#include <sys/types.h>
#include "trace_format.h"

/* zstd level of every frame: the flusher shares the CPU with the app, and
 * the log is small anyway because stacks and strings are written once. */
#define LOG_COMPRESSION_LEVEL 1

/* At start: reserve the descriptor. */
void log_file_init(void);

/* Compress c into one frame and append it.  On any failure (bad path, full
 * disk) warn once, stop the recorder and return -1; after that every call
 * returns -1 at once. */
int log_write(const tf_chunk *c, void *cctx);

/* The log's size so far, and cutting it back to that size (exec: the END
 * written before the call is taken back when the call fails). */
off_t log_size(void);
void log_truncate(off_t size);

/* The file's path once it exists (else the name it would get first). */
const char *log_path(void);

/* Is this number the log's?  The app made a call (dup2 onto it) that takes
 * the number: log_move_away moves the log elsewhere first (the caller holds
 * the flusher's token, so no frame is being written meanwhile). */
int log_owns_fd(int number);
void log_move_away(void);

/* In a forked child: let go of the parent's file without touching it (the
 * number keeps being ours, now a placeholder). */
void log_fork_child(void);

int log_failed(void);

#endif
