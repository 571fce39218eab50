/*
 * follow.h - a log read while the recorder writes it (check --follow).
 *
 * A source (source.h) whose next() waits: for the log to appear, for each
 * frame the recorder's flusher writes (inotify wakes it, so a frame is read
 * as soon as it is on disk), for the next segment of a log kept within a
 * budget.  It ends at the END record, or once the writing process is gone
 * and the files hold nothing more (the log then ended without END).
 *
 * It knows the writing process: the header's pid (or --pid, before the log
 * exists), held through a pidfd once it is checked to be the process that
 * started the log, not a later one that got the same number.  Signals for
 * --on-violation go through that handle, so they reach the writer or
 * nobody.
 */
#ifndef RP_FOLLOW_H
#define RP_FOLLOW_H

#include <stddef.h>

#include "source.h"

/* How a followed log ended. */
typedef enum rp_follow_end {
    RP_FOLLOW_RUNNING,         /* not yet */
    RP_FOLLOW_END,             /* its END record */
    RP_FOLLOW_GONE,            /* the writer is gone and nothing more came */
    RP_FOLLOW_NO_LOG,          /* the process ended without writing a log */
    RP_FOLLOW_INTERRUPTED      /* SIGINT, SIGTERM or SIGHUP to the follower */
} rp_follow_end;

/* Open path for following: waits for it to appear with a whole first frame
 * (pid, if not 0, is the process expected to write it: once it is gone with
 * no log, there will be none).  0, or -1 with err (not a log, no log, or
 * interrupted). */
int rp_follow_open(rp_source *s, const char *path, int pid, char *err, size_t errlen);

rp_follow_end rp_follow_ending(const rp_source *s);
/* The writer's pid (0 when unknown). */
int rp_follow_pid(const rp_source *s);
/* Send sig to the writer, if it is still there.  0, or -1 (gone). */
int rp_follow_signal(rp_source *s, int sig);
/* Make SIGINT, SIGTERM and SIGHUP end the wait (the reading so far is then
 * reported), instead of killing the follower. */
void rp_follow_catch_signals(void);

#endif
