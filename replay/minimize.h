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

#include "replay.h"
#include "source.h"

/* 1: out written, and it still breaks the invariant; 0: the log breaks
 * nothing, nothing written (err says so); 2: error (err).  progress: where
 * to say what was kept (NULL: nowhere). */
int rp_minimize(const rp_options *o, rp_source *src, const char *out, FILE *progress, char *err, size_t errlen);

/* The search alone, over events in memory: marks keep[i] for the events of
 * a small log breaking `invariant`.  Returns how many replays it ran. */
size_t rp_minimize_events(const rp_options *o, const tf_event *ev, size_t n, const char *invariant,
                          unsigned char *keep);

#endif
