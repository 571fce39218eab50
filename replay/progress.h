/*
 * progress.h - a one-line progress display for long reads.
 *
 * Shown only when stderr is a terminal: pipes, files and CI logs get nothing,
 * so output stays byte-identical between runs.  Ticking is cheap (a counter
 * test per event; the clock is read every few thousand events).
 */
#ifndef RP_PROGRESS_H
#define RP_PROGRESS_H

#include <stdint.h>

typedef struct rp_progress {
    int on;                 /* stderr is a terminal and TRACE_NO_PROGRESS is unset */
    int shown;              /* a line is on screen */
    const char *what;
    uint64_t start_ns, next_ns;
    uint64_t ticks;
} rp_progress;

/* what: the command and what it does ("trace-replay export"). */
void rp_progress_start(rp_progress *p, const char *what);
/* seq: the event just handled. */
void rp_progress_tick(rp_progress *p, uint64_t seq);
/* A line of the caller's own after "what: " (minimize: "120 replays, 4.1k
 * of 89k events kept"), shown when due like a tick. */
void rp_progress_say(rp_progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Erase the line. */
void rp_progress_done(rp_progress *p);

#endif
