/*
 * minimize.h - shrink a violating log to a small one breaking the same
 * invariant.
 *
 * The log is cut after the violation, then delta debugging removes whole
 * units (an event outside every operation, or an operation or collection
 * with everything nested in it, joined with the units that allocate or free
 * the same blocks) while the replay still breaks the same invariant; then
 * it tries dropping the operations nested inside the units left, and the
 * units again.  The result is written with the format's writer: stacks,
 * strings and modules re-interned, sequence numbers renumbered, an END
 * record at the end.
 */
#ifndef RP_MINIMIZE_H
#define RP_MINIMIZE_H

#include <stddef.h>
#include <stdio.h>

#include "checkpoint.h"
#include "replay.h"
#include "source.h"

/* What a minimize did. */
typedef struct rp_minimized {
    char invariant[40];        /* the one the small log still breaks */
    size_t kept, events;       /* events written, of those up to the violation */
    size_t replays;
    /* The original's pool model followed the log up to the violation, and
     * in the small log it leaves the log this many times before it (0: it
     * follows it too): the small log then shows how the model breaks, not
     * necessarily how the pool did. */
    uint64_t diverged_before;
} rp_minimized;

/* 1: out written, and it still breaks the invariant; 0: the log breaks
 * nothing, nothing written (err says so); 2: error (err).  The source is
 * read again for every replay (it must rewind): memory stays what a replay
 * needs plus a few bytes per unit and a bit per event.  start (NULL: none):
 * a replay's state after an event of the log (a cut log's checkpoint, or
 * the log's own CHECKPOINT record): every replay starts from it, the events
 * after it are minimized, and the small log carries the state (stack ids
 * left out) in its CHECKPOINT record before its first event.  The search
 * stops after max_replays replays (0: 20,000), keeping what it has: a
 * valid result, only less small. */
int rp_minimize(const rp_options *o, rp_source *src, const rp_checkpoint *start, size_t max_replays,
                const char *out, rp_minimized *m, char *err, size_t errlen);

/* The search alone, over events in memory: marks keep[i] for the events of
 * a small log breaking `invariant`.  Returns how many replays it ran. */
size_t rp_minimize_events(const rp_options *o, const tf_event *ev, size_t n, const char *invariant,
                          unsigned char *keep);

#endif
