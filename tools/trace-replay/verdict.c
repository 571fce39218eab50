/* verdict.c - what every command concludes, in the same words. */
#include "verdict.h"
#include "trace_format.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* What the text says after the verdict's own words: how far the model
 * followed the log, and the collections no stack places. */
static void fidelity_clause(char *buf, size_t len, const rp_verdict_facts *f, int fidelity)
{
    size_t n = 0;
    buf[0] = 0;
    if (!fidelity)
        n = 0;  /* the verdict says it in its own words */
    else if (f->violation && f->by_model && f->diverged_before)
        n += (size_t)snprintf(buf, len, "; but the model had left the log %" PRIu64 " time(s) before it, first at seq %"
                              PRIu64 ": the violation may be the model's, not the pool's", f->diverged_before,
                              f->first_diverged_seq);
    else if (f->violation && f->by_model && f->matched)
        n += (size_t)snprintf(buf, len, "; the model followed the log up to it (%" PRIu64 " matched, none diverged "
                              "before it)", f->matched);
    else if (!f->violation && f->diverged)
        n += (size_t)snprintf(buf, len, "; the model left the log %" PRIu64 " time(s), first at seq %" PRIu64
                              ": after that the replay checks a pool the program did not have", f->diverged,
                              f->first_diverged_seq);
    if (f->ambiguous && n < len)
        snprintf(buf + n, len - n, "; %" PRIu64 " ambiguous collection(s): where no stack says it started, it "
                 "breaks the pool in one place and not in another (not a violation: see the warnings \"ambiguity\")",
                 f->ambiguous);
}

void rp_verdict_make(rp_verdict *v, const rp_verdict_facts *f)
{
    char tail[512] = "", fid[384];
    uint64_t answers = f->matched + f->diverged;
    if (f->damage)
        snprintf(tail, sizeof tail, "; as far as the log reads: %s", f->damage);
    /* No violation says nothing of the pools after their models went off:
     * say from where. */
    if (f->models_off_from) {
        size_t used = strlen(tail);
        snprintf(tail + used, sizeof tail - used, "; the pool models were off from event %" PRIu64 " on (events "
                 "were missing before it and no checkpoint held the state): after it only the model-free checks ran",
                 f->models_off_from);
    }
    fidelity_clause(fid, sizeof fid, f, 1);
    /* A pool's invariant broken where some thread's pool requests went
     * unrecorded: a block it freed unseen and handed out again, or one it
     * allocated unseen and another thread freed, looks exactly so.  Not a
     * violation to report as the pool's. */
    if (f->violation && !f->injected && rp_verdict_unwatched_finding(f->pool_unwatched, f->by_model, f->violation)) {
        v->status = RP_EXIT_INCONCLUSIVE;
        v->result = "inconclusive";
        snprintf(v->text, sizeof v->text, "INCONCLUSIVE: %s at seq %" PRIu64 " (%s), but not every thread's pool "
                 "requests were recorded (%s): the finding may come from those", f->violation->invariant,
                 f->violation->at.seq, f->source, f->pool_unwatched);
        return;
    }
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
            snprintf(v->text, sizeof v->text, "VIOLATION %s at seq %" PRIu64 " (%s)%s", f->violation->invariant,
                     f->violation->at.seq, f->source, fid);
        return;
    }
    if (answers && f->diverged * 1000 > (uint64_t)RP_TRUST_DIVERGED_PERMILLE * answers) {
        v->status = RP_EXIT_INCONCLUSIVE;
        v->result = "inconclusive";
        fidelity_clause(fid, sizeof fid, f, 0);
        /* Collections inside pool operations that no stack placed, before
         * the model first left the log: where they re-entered the pool is
         * the likelier cause than the model (a log recorded without native
         * stacks: seed 000's story). */
        char why[400] = "is it the right --model?";
        if (f->unplaced && f->first_unplaced_seq <= f->first_diverged_seq)
            snprintf(why, sizeof why, "%" PRIu64 " collection(s) ran inside pool operations, the first at seq %" PRIu64
                     ", and %s: where each re-entered the pool is not known, which can put the model off as a wrong "
                     "--model does; %s", f->unplaced, f->first_unplaced_seq,
                     f->no_native_stacks ? "the log has no native stacks (TRACE_STACK_DEPTH=0)"
                                         : "their native stacks name none of the pool's functions",
                     f->no_native_stacks ? "record with native stacks (TRACE_STACK_DEPTH, default 32)"
                                         : "give the pool's symbols (--debug-dir), or is it the right --model?");
        snprintf(v->text, sizeof v->text, "INCONCLUSIVE: no violation, but model %s diverged from the log on %" PRIu64
                 " of its %" PRIu64 " answers (%.1f%%, first at seq %" PRIu64 "): the model left the log, and a clean "
                 "result from a replay that left the pool this often cannot be trusted (%s)%s%s",
                 f->model, f->diverged, answers, 100.0 * (double)f->diverged / (double)answers, f->first_diverged_seq,
                 why, fid, tail);
        return;
    }
    v->status = RP_EXIT_CLEAN;
    v->result = "clean";
    if (!f->ops)
        snprintf(v->text, sizeof v->text, "clean (model-free checks; no pool operation went through a model)%s%s", fid,
                 tail);
    else if (!f->diverged)
        snprintf(v->text, sizeof v->text, "clean (model %s, %" PRIu64 " operations, the model followed the log "
                 "exactly: %" PRIu64 " matched, none diverged)%s%s", f->model, f->ops, f->matched, fid, tail);
    else
        snprintf(v->text, sizeof v->text, "clean (model %s, %" PRIu64 " operations; %" PRIu64 " of its %" PRIu64
                 " answers diverged)%s%s", f->model, f->ops, f->diverged, answers, fid, tail);
}

const char *rp_verdict_pool_unwatched(const struct tf_reader *r)
{
    for (uint32_t i = 0; r && i < tf_reader_info_count(r); i++) {
        const char *key, *value;
        if (tf_reader_info(r, i, &key, &value) && key && !strcmp(key, "pool_unwatched"))
            return value;
    }
    return NULL;
}

int rp_verdict_no_native_stacks(const struct tf_reader *r)
{
    const tf_header *h = r ? tf_reader_header(r) : NULL;
    const char *s = h && h->settings ? strstr(h->settings, "stack_depth=") : NULL;
    return s && (s == h->settings || s[-1] == ';') && s[12] == '0' && (s[13] == ';' || s[13] == '\0');
}

int rp_verdict_unwatched_finding(const char *pool_unwatched, int by_model, const rp_finding *v)
{
    return pool_unwatched && v && (by_model || strstr(v->message, "pool blocks") != NULL);
}
