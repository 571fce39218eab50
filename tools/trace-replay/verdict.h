/*
 * verdict.h - one verdict, said the same way by every command.
 *
 * check, stats, explore, minimize and report each state exactly one verdict,
 * as the last line of their text ("verdict: ...") and as "verdict" in their
 * JSON, and exit with its status:
 *
 *   0  clean: no invariant broke, and the replay followed the log closely
 *      enough for that to mean something
 *   1  VIOLATION: an invariant broke (explore: an injected collection breaks
 *      one; minimize: the smaller log written still breaks it)
 *   2  usage error, or a log that cannot be read
 *   3  INCONCLUSIVE: nothing broke, but the model diverged from the log on
 *      more than RP_TRUST_DIVERGED_PERMILLE of its answers (a wrong --model,
 *      or a pool the model does not reproduce): a clean result from such a
 *      replay cannot be trusted; or a pool's invariant broke in a log that
 *      says some thread's pool requests were not recorded (pool_unwatched):
 *      the finding may come from what was not seen
 *
 * The verdict also says how far the model followed the log (docs/models.md,
 * "Fidelity, next to the verdict"): a pool model's violation after the
 * model had left the log "may be the model's, not the pool's"; a clean
 * replay that left it checked "a pool the program did not have" after that;
 * collections no stack places whose outcomes differ are counted
 * ("ambiguous"), never a violation.
 */
#ifndef RP_VERDICT_H
#define RP_VERDICT_H

#include <stdint.h>

#include "finding.h"

/* Divergences per thousand answers above which a clean result is not
 * trusted: 10 (1 %).  Real runs of a faithful model diverge far less (seed
 * 000's logs: 1 in 4,000); a wrong model diverges on most answers. */
#define RP_TRUST_DIVERGED_PERMILLE 10

enum { RP_EXIT_CLEAN = 0, RP_EXIT_VIOLATION = 1, RP_EXIT_USAGE = 2, RP_EXIT_INCONCLUSIVE = 3 };

typedef struct rp_verdict_facts {
    const rp_finding *violation;   /* the first one, or NULL */
    const char *source;            /* what found it: "pool model cupy5", "model-free checks" */
    int injected;                  /* explore: it broke under an injected collection */
    const char *point;             /*   ... injected there */
    const char *model;             /* "cupy5", "auto", "none" */
    uint64_t ops;                  /* operations replayed through a model */
    uint64_t matched, diverged, first_diverged_seq;
    int by_model;                  /* the violation is a pool model's: it is as good as the model's fidelity */
    uint64_t diverged_before;      /* divergences before the violation's event (all of them when clean) */
    uint64_t ambiguous;            /* collections no stack places whose outcomes differ (warnings "ambiguity") */
    uint64_t unplaced;             /* collections nested in pool operations that no stack placed */
    uint64_t first_unplaced_seq;   /*   ... the first one's gc_start */
    int no_native_stacks;          /* the log was recorded with TRACE_STACK_DEPTH=0 */
    const char *damage;            /* the reader's damage line, or NULL */
    uint64_t models_off_from;      /* events were missing before this one, no checkpoint: the pool models
                                      that were asked for were off from here (0: they never were) */
    const char *pool_unwatched;    /* INFO pool_unwatched: threads whose pool requests were not recorded
                                      (NULL: none); a pool finding is then INCONCLUSIVE, not a violation */
} rp_verdict_facts;

typedef struct rp_verdict {
    int status;                    /* RP_EXIT_* */
    const char *result;            /* "clean", "violation", "inconclusive" */
    char text[1024];               /* the line after "verdict: " */
} rp_verdict;

void rp_verdict_make(rp_verdict *v, const rp_verdict_facts *f);

/* The log's INFO pool_unwatched (the recorder could not see every thread's
 * pool requests: CuPy's hook is per thread), or NULL. */
struct tf_reader;
const char *rp_verdict_pool_unwatched(const struct tf_reader *r);
/* Whether the log says it was recorded without native stacks
 * (stack_depth=0 in its header's settings). */
int rp_verdict_no_native_stacks(const struct tf_reader *r);
/* Whether finding v (a pool model's when by_model) is one that unrecorded
 * pool requests could explain, in a log with INFO pool_unwatched. */
int rp_verdict_unwatched_finding(const char *pool_unwatched, int by_model, const rp_finding *v);

#endif
