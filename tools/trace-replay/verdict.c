/* verdict.c - what every command concludes, in the same words. */
#include "verdict.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void rp_verdict_make(rp_verdict *v, const rp_verdict_facts *f)
{
    char tail[256] = "";
    uint64_t answers = f->matched + f->diverged;
    if (f->damage)
        snprintf(tail, sizeof tail, "; as far as the log reads: %s", f->damage);
    /* A violation stands whatever the rest of the log holds (check stops
     * reading there, the report reads on): the damage is no part of it. */
    if (f->violation) {
        v->status = RP_EXIT_VIOLATION;
        v->result = "violation";
        if (f->injected)
            snprintf(v->text, sizeof v->text, "VIOLATION if a collection ran at %s: an injected collection breaks %s "
                     "at seq %" PRIu64 " (explore, %s)", f->point ? f->point : "a re-entrancy point",
                     f->violation->invariant, f->violation->at.seq, f->source);
        else
            snprintf(v->text, sizeof v->text, "VIOLATION %s at seq %" PRIu64 " (%s)", f->violation->invariant,
                     f->violation->at.seq, f->source);
        return;
    }
    if (answers && f->diverged * 1000 > (uint64_t)RP_TRUST_DIVERGED_PERMILLE * answers) {
        v->status = RP_EXIT_INCONCLUSIVE;
        v->result = "inconclusive";
        snprintf(v->text, sizeof v->text, "INCONCLUSIVE: no violation, but model %s diverged from the log on %" PRIu64
                 " of its %" PRIu64 " answers (%.1f%%, first at seq %" PRIu64 "): a clean result from a replay that "
                 "left the pool this often cannot be trusted (is it the right --model?)%s", f->model, f->diverged,
                 answers, 100.0 * (double)f->diverged / (double)answers, f->first_diverged_seq, tail);
        return;
    }
    v->status = RP_EXIT_CLEAN;
    v->result = "clean";
    if (!f->ops)
        snprintf(v->text, sizeof v->text, "clean (model-free checks; no pool operation went through a model)%s", tail);
    else if (!f->diverged)
        snprintf(v->text, sizeof v->text, "clean (model %s, %" PRIu64 " operations, the model followed the log "
                 "exactly)%s", f->model, f->ops, tail);
    else
        snprintf(v->text, sizeof v->text, "clean (model %s, %" PRIu64 " operations; it diverged from the log on %"
                 PRIu64 " of %" PRIu64 " answers, first at seq %" PRIu64 ")%s", f->model, f->ops, f->diverged,
                 answers, f->first_diverged_seq, tail);
}
