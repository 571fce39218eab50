/*
 * explore.h - "what if a collection had run here?"
 *
 * At each re-entrancy point of each pool operation, run the operation again
 * on a copy of the model with a collection injected there: one that frees
 * the blocks the log shows freed by the next later collection (those already
 * allocated by then).  The first injection that breaks an invariant is the
 * report.  Two passes over the log: one to learn which blocks collections
 * free, one to replay and probe.
 */
#ifndef RP_EXPLORE_H
#define RP_EXPLORE_H

#include "replay.h"
#include "source.h"

#define RP_EXPLORE_MAX_FREES 64

typedef struct rp_explore_result {
    uint64_t probes;           /* injections tried */
    int found;
    rp_finding finding;        /* what the injection broke */
    rp_opref op;               /* the operation it was injected into */
    const char *point;         /* the model's re-entrancy point */
    uint64_t gc_seq;           /* the later collection whose frees were injected */
    uint64_t frees[RP_EXPLORE_MAX_FREES];
    uint32_t nfrees;
} rp_explore_result;

/* Returns the replay (its result says whether the log itself broke an
 * invariant first), or NULL when the source could not be read twice. */
rp_replay *rp_explore(const rp_options *o, rp_source *src, rp_explore_result *out);

#endif
