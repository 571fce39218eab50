/*
 * log_file.h - the file a log goes to.  Opened on the first write, so a
 * process that execs before recording anything leaves no empty log behind
 * (and the new image can create its own under the same pid).
 */
#ifndef TRACE_LOG_FILE_H
#define TRACE_LOG_FILE_H

#include <stdint.h>
#include "trace_format.h"

/* Compress c into one frame and append it.  On any failure (bad path,
 * existing file, full disk) warn once, stop the recorder and return -1;
 * after that every call returns -1 at once. */
int log_write(const tf_chunk *c, void *cctx);

void log_close(void);

/* In a forked child: let go of the parent's file without touching it. */
void log_fork_child(void);

int log_failed(void);

#endif
