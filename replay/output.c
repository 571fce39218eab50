/* output.c - text and JSON reports of a replay. */
#include "output.h"

#include <inttypes.h>
#include <string.h>

#include "json.h"

#define MAX_FRAMES 64
#define TEXT_WARNINGS 10

static const char *kind_name(uint32_t kind)
{
    const char *n = tf_kind_name(kind);
    return n ? n : "event";
}

static const char *op_name(const rp_opref *o)
{
    switch (o->op) {
    case TF_POOL_OP_ALLOC: return "alloc";
    case TF_POOL_OP_FREE: return "free";
    case TF_POOL_OP_OTHER: return "other";
    default: return kind_name(o->kind);
    }
}

static const char *pool_name(const rp_output *rep, uint32_t pool)
{
    const char *n = rep->reader ? tf_reader_pool_name(rep->reader, pool) : NULL;
    return n ? n : "";
}

static double fragmentation(const rp_model_stats *st)
{
    /* 0 when the free memory is one block, towards 1 when it is dust. */
    return st->free_bytes ? 1.0 - (double)st->largest_free / (double)st->free_bytes : 0.0;
}

/* ------------------------------------------------------------------- JSON */

static void json_stacks(const rp_output *rep, rp_json *j, uint32_t native, uint32_t py)
{
    rp_native_frame nf[MAX_FRAMES];
    rp_py_frame pf[MAX_FRAMES];
    uint32_t n = rp_stacks_native(rep->stacks, native, nf, MAX_FRAMES);
    rp_json_arr(j, "native_stack");
    for (uint32_t i = 0; i < n; i++) {
        rp_json_obj(j, NULL);
        rp_json_hex(j, "ip", nf[i].ip);
        rp_json_str(j, "module", nf[i].module);
        rp_json_hex(j, "offset", nf[i].offset);
        rp_json_str(j, "function", nf[i].function);
        rp_json_str(j, "file", nf[i].file);
        if (nf[i].line)
            rp_json_u64(j, "line", nf[i].line);
        else
            rp_json_null(j, "line");
        rp_json_end_obj(j);
    }
    rp_json_end_arr(j);
    n = rp_stacks_py(rep->stacks, py, pf, MAX_FRAMES);
    rp_json_arr(j, "py_stack");
    for (uint32_t i = 0; i < n; i++) {
        rp_json_obj(j, NULL);
        rp_json_str(j, "file", pf[i].file);
        rp_json_u64(j, "line", pf[i].line);
        rp_json_str(j, "function", pf[i].function);
        rp_json_end_obj(j);
    }
    rp_json_end_arr(j);
}

static void json_opref(const rp_output *rep, rp_json *j, const char *key, const rp_opref *o)
{
    rp_json_obj(j, key);
    rp_json_u64(j, "seq", o->seq);
    rp_json_str(j, "kind", op_name(o));
    if (o->kind != TF_EV_GC_START) {
        rp_json_u64(j, "pool", o->pool);
        rp_json_str(j, "pool_name", pool_name(rep, o->pool));
        rp_json_hex(j, "arg", o->arg);
    }
    rp_json_end_obj(j);
}

static void json_finding(const rp_output *rep, rp_json *j, const rp_finding *f)
{
    rp_json_u64(j, "seq", f->at.seq);
    rp_json_str(j, "invariant", f->invariant);
    rp_json_str(j, "message", f->message);
    json_stacks(rep, j, f->at.native_stack, f->at.py_stack);
    if (f->other.seq) {
        rp_json_obj(j, "other");
        rp_json_u64(j, "seq", f->other.seq);
        json_stacks(rep, j, f->other.native_stack, f->other.py_stack);
        rp_json_end_obj(j);
    }
}

static void json_violation(const rp_output *rep, rp_json *j, const rp_result *res)
{
    if (!res->violated) {
        rp_json_null(j, "violation");
        return;
    }
    rp_json_obj(j, "violation");
    json_finding(rep, j, &res->violation);
    rp_json_arr(j, "broken");
    for (uint32_t i = 0; i < res->nbroken; i++) {
        rp_json_obj(j, NULL);
        rp_json_str(j, "invariant", res->broken[i].invariant);
        rp_json_str(j, "message", res->broken[i].message);
        rp_json_bool(j, "warning", res->broken[i].warning);
        rp_json_end_obj(j);
    }
    rp_json_end_arr(j);
    if (res->op.seq)
        json_opref(rep, j, "op", &res->op);
    else
        rp_json_null(j, "op");
    rp_json_arr(j, "nested_in");
    for (uint32_t i = 0; i < res->nnested; i++)
        json_opref(rep, j, NULL, &res->nested_in[i]);
    rp_json_end_arr(j);
    rp_json_arr(j, "reentries");
    for (uint32_t i = 0; i < res->nreentries; i++) {
        const rp_reentry *re = &res->reentries[i];
        rp_json_obj(j, NULL);
        rp_json_u64(j, "op_seq", re->op_seq);
        rp_json_str(j, "point", re->point ? re->point : "after the operation");
        rp_json_u64(j, "gc_seq", re->gc_seq);
        rp_json_u64(j, "first_nested_seq", re->nested_seq);
        rp_json_u64(j, "nested_ops", re->nested_ops);
        rp_json_obj(j, "gc");
        json_stacks(rep, j, re->gc_native_stack, re->gc_py_stack);
        rp_json_end_obj(j);
        rp_json_end_obj(j);
    }
    rp_json_end_arr(j);
    rp_json_end_obj(j);
}

static void json_pools(const rp_output *rep, rp_json *j, const rp_replay *r)
{
    rp_json_arr(j, "pools");
    for (uint32_t i = 0; i < rp_replay_pool_count(r); i++) {
        uint32_t id;
        const rp_model_ops *m;
        rp_model_stats st;
        rp_replay_pool_at(r, i, &id, &m, &st);
        rp_json_obj(j, NULL);
        rp_json_u64(j, "id", id);
        rp_json_str(j, "name", pool_name(rep, id));
        rp_json_str(j, "model", m ? m->name : "none");
        rp_json_u64(j, "reserved", st.reserved);
        rp_json_u64(j, "allocated", st.allocated);
        rp_json_u64(j, "segments", st.segments);
        rp_json_u64(j, "free_bytes", st.free_bytes);
        rp_json_u64(j, "free_blocks", st.free_blocks);
        rp_json_u64(j, "largest_free", st.largest_free);
        rp_json_double(j, "fragmentation", fragmentation(&st));
        rp_json_end_obj(j);
    }
    rp_json_end_arr(j);
}

static void json_stats(rp_json *j, const rp_result *res)
{
    rp_json_obj(j, "stats");
    rp_json_u64(j, "peak_reserved_seq", res->peak_reserved_seq);
    rp_json_u64(j, "peak_allocated_seq", res->peak_allocated_seq);
    rp_json_u64(j, "operations", res->ops);
    rp_json_arr(j, "series");
    for (uint64_t i = 0; i < res->nseries; i++) {
        const rp_series_point *p = &res->series[i];
        rp_json_obj(j, NULL);
        rp_json_u64(j, "seq", p->seq);
        rp_json_u64(j, "reserved", p->reserved);
        rp_json_u64(j, "allocated", p->allocated);
        rp_json_u64(j, "segments", p->segments);
        rp_json_u64(j, "free_bytes", p->free_bytes);
        rp_json_u64(j, "largest_free", p->largest_free);
        rp_json_end_obj(j);
    }
    rp_json_end_arr(j);
    rp_json_arr(j, "segment_sizes");
    for (int b = 0; b < 64; b++) {
        if (!res->seg_sizes[b])
            continue;
        rp_json_obj(j, NULL);
        rp_json_u64(j, "min_bytes", 1ULL << b);
        rp_json_u64(j, "count", res->seg_sizes[b]);
        rp_json_end_obj(j);
    }
    rp_json_end_arr(j);
    rp_json_end_obj(j);
}

static void json_explore(const rp_output *rep, rp_json *j, const rp_explore_result *x)
{
    rp_json_obj(j, "explore");
    rp_json_u64(j, "probes", x->probes);
    if (!x->found) {
        rp_json_null(j, "found");
        rp_json_end_obj(j);
        return;
    }
    rp_json_obj(j, "found");
    json_finding(rep, j, &x->finding);
    json_opref(rep, j, "op", &x->op);
    rp_json_str(j, "point", x->point);
    rp_json_u64(j, "gc_seq", x->gc_seq);
    rp_json_arr(j, "injected_frees");
    for (uint32_t i = 0; i < x->nfrees; i++)
        rp_json_hex(j, NULL, x->frees[i]);
    rp_json_end_arr(j);
    rp_json_end_obj(j);
    rp_json_end_obj(j);
}

static void print_json(const rp_output *rep, const rp_replay *r)
{
    const rp_result *res = rp_replay_result(r);
    rp_json j;
    rp_json_init(&j, rep->out);
    rp_json_obj(&j, NULL);
    rp_json_str(&j, "command", rep->command);
    rp_json_str(&j, "status", res->violated || (rep->explore && rep->explore->found) ? "violation" : "clean");
    rp_json_u64(&j, "events", res->events);
    rp_json_str(&j, "model", rep->model);
    rp_json_u64(&j, "peak_reserved", res->peak_reserved);
    rp_json_u64(&j, "peak_allocated", res->peak_allocated);
    rp_json_obj(&j, "fidelity");
    rp_json_u64(&j, "matched", res->matched);
    rp_json_u64(&j, "diverged", res->diverged);
    rp_json_u64(&j, "first_diverged_seq", res->first_diverged_seq);
    rp_json_u64(&j, "diverged_before_violation", res->violated ? res->diverged_before_violation : res->diverged);
    rp_json_bool(&j, "following", !(res->violated ? res->diverged_before_violation : res->diverged));
    rp_json_end_obj(&j);
    rp_json_u64(&j, "ambiguities", res->ambiguous);
    rp_json_arr(&j, "notes");
    for (uint32_t i = 0; i < res->nnotes; i++)
        rp_json_str(&j, NULL, res->notes[i].text);
    rp_json_end_arr(&j);
    rp_json_bool(&j, "clean_end", rep->clean_end);
    rp_json_str(&j, "damage", rep->damage);
    json_pools(rep, &j, r);
    json_violation(rep, &j, res);
    const rp_finding *w;
    uint64_t total;
    uint32_t n = rp_replay_warnings(r, &w, &total);
    rp_json_u64(&j, "warnings_total", total);
    rp_json_arr(&j, "warnings");
    for (uint32_t i = 0; i < n; i++) {
        rp_json_obj(&j, NULL);
        json_finding(rep, &j, &w[i]);
        rp_json_end_obj(&j);
    }
    rp_json_end_arr(&j);
    if (rep->stats)
        json_stats(&j, res);
    if (rep->explore)
        json_explore(rep, &j, rep->explore);
    rp_json_end_obj(&j);
}

/* ------------------------------------------------------------------- text */

static void text_stacks(const rp_output *rep, const char *indent, uint32_t native, uint32_t py)
{
    FILE *f = rep->out;
    rp_native_frame nf[MAX_FRAMES];
    rp_py_frame pf[MAX_FRAMES];
    uint32_t n = rp_stacks_native(rep->stacks, native, nf, MAX_FRAMES);
    if (n)
        fprintf(f, "%snative stack:\n", indent);
    for (uint32_t i = 0; i < n; i++) {
        fprintf(f, "%s  #%-2u 0x%" PRIx64, indent, i, nf[i].ip);
        if (nf[i].module)
            fprintf(f, " %s+0x%" PRIx64, nf[i].module, nf[i].offset);
        if (nf[i].function)
            fprintf(f, " %s", nf[i].function);
        if (nf[i].file)
            fprintf(f, " (%s:%u)", nf[i].file, nf[i].line);
        fputc('\n', f);
    }
    n = rp_stacks_py(rep->stacks, py, pf, MAX_FRAMES);
    if (n)
        fprintf(f, "%spython stack:\n", indent);
    for (uint32_t i = 0; i < n; i++)
        fprintf(f, "%s  #%-2u %s:%u in %s\n", indent, i, pf[i].file ? pf[i].file : "?", pf[i].line,
                pf[i].function ? pf[i].function : "?");
}

static void text_op(const rp_output *rep, const rp_opref *o)
{
    if (o->kind == TF_EV_GC_START)
        fprintf(rep->out, "collection (seq %" PRIu64 ")", o->seq);
    else
        fprintf(rep->out, "%s 0x%" PRIx64 " on pool %u \"%s\" (seq %" PRIu64 ")", op_name(o), o->arg, o->pool,
                pool_name(rep, o->pool), o->seq);
}

static void text_finding(const rp_output *rep, const char *label, const rp_finding *v)
{
    FILE *f = rep->out;
    fprintf(f, "%s %s at seq %" PRIu64 "\n  %s\n", label, v->invariant, v->at.seq, v->message);
    text_stacks(rep, "  ", v->at.native_stack, v->at.py_stack);
    if (v->other.seq) {
        fprintf(f, "  the other event: seq %" PRIu64 "\n", v->other.seq);
        text_stacks(rep, "    ", v->other.native_stack, v->other.py_stack);
    }
}

static void text_violation(const rp_output *rep, const rp_result *res)
{
    FILE *f = rep->out;
    text_finding(rep, "VIOLATION", &res->violation);
    for (uint32_t i = 1; i < res->nbroken; i++)
        fprintf(f, "  also broken at this step: %s%s: %s\n", res->broken[i].invariant,
                res->broken[i].warning ? " (a warning: the pool lives with it)" : "", res->broken[i].message);
    if (res->op.seq) {
        fputs("  during ", f);
        text_op(rep, &res->op);
        fputc('\n', f);
    }
    for (uint32_t i = 0; i < res->nnested; i++) {
        fputs("    nested in ", f);
        text_op(rep, &res->nested_in[i]);
        fputc('\n', f);
    }
    for (uint32_t i = 0; i < res->nreentries; i++) {
        const rp_reentry *re = &res->reentries[i];
        fprintf(f, "  re-entered %s: collection seq %" PRIu64 " ran %u nested operation(s), first at seq %" PRIu64 "\n",
                re->point ? re->point : "after the operation", re->gc_seq, re->nested_ops, re->nested_seq);
        text_stacks(rep, "    ", re->gc_native_stack, re->gc_py_stack);
    }
}

static void print_text(const rp_output *rep, const rp_replay *r)
{
    FILE *f = rep->out;
    const rp_result *res = rp_replay_result(r);
    if (rep->damage)
        fprintf(f, "note: %s\n", rep->damage);
    if (res->violated)
        text_violation(rep, res);
    if (rep->explore) {
        const rp_explore_result *x = rep->explore;
        if (x->found) {
            text_finding(rep, "EXPLORE: an injected collection breaks", &x->finding);
            fprintf(f, "  injected at %s in ", x->point ? x->point : "?");
            text_op(rep, &x->op);
            fprintf(f, "\n  freeing %u block(s) that collection seq %" PRIu64 " freed later:", x->nfrees, x->gc_seq);
            for (uint32_t i = 0; i < x->nfrees; i++)
                fprintf(f, " 0x%" PRIx64, x->frees[i]);
            fputc('\n', f);
        } else {
            fprintf(f, "explore: no injection broke an invariant (%" PRIu64 " tried)\n", x->probes);
        }
    }
    fprintf(f, "%s: %" PRIu64 " events, model %s, %s", rep->command, res->events, rep->model,
            res->violated ? "violation" : "no violation");
    /* How far to trust the verdict: did the model follow the log up to it? */
    uint64_t before = res->violated ? res->diverged_before_violation : res->diverged;
    if (!res->matched && !res->diverged)
        fputs("\n", f);
    else if (!before)
        fprintf(f, "; the model followed the log (%" PRIu64 " matched, none diverged%s)\n", res->matched,
                res->diverged ? " before the violation" : "");
    else if (res->violated)
        fprintf(f, "; but the model had left the log %" PRIu64 " time(s) before it, first at seq %" PRIu64
                   ": the violation may be the model's, not the pool's\n", before, res->first_diverged_seq);
    else
        fprintf(f, "; but the model left the log %" PRIu64 " time(s), first at seq %" PRIu64
                   ": after that the replay checks a pool the program did not have\n", before,
                res->first_diverged_seq);
    for (uint32_t i = 0; i < res->nnotes; i++)
        fprintf(f, "  model note: %s\n", res->notes[i].text);
    if (res->notes_dropped)
        fprintf(f, "  model note: %u more not shown\n", res->notes_dropped);
    if (res->ambiguous)
        fprintf(f, "  ambiguous: %" PRIu64 " collection(s) that no stack places (the first at seq %" PRIu64
                   ") break the pool started in one place and not in another; not a violation: the warnings "
                   "\"ambiguity\" give both outcomes\n", res->ambiguous, res->first_ambiguous_seq);
    fprintf(f, "peak reserved %" PRIu64 " bytes (seq %" PRIu64 "), peak allocated %" PRIu64 " bytes (seq %" PRIu64
               ")\n", res->peak_reserved, res->peak_reserved_seq, res->peak_allocated, res->peak_allocated_seq);
    fprintf(f, "fidelity: %" PRIu64 " matched, %" PRIu64 " diverged", res->matched, res->diverged);
    if (res->diverged)
        fprintf(f, " (first at seq %" PRIu64 ")", res->first_diverged_seq);
    fputc('\n', f);
    for (uint32_t i = 0; i < rp_replay_pool_count(r); i++) {
        uint32_t id;
        const rp_model_ops *m;
        rp_model_stats st;
        rp_replay_pool_at(r, i, &id, &m, &st);
        fprintf(f, "pool %u \"%s\": model %s", id, pool_name(rep, id), m ? m->name : "none");
        if (m)
            fprintf(f, ", reserved %" PRIu64 " in %" PRIu64 " segments, allocated %" PRIu64 ", free %" PRIu64
                       " in %" PRIu64 " blocks (largest %" PRIu64 "), fragmentation %.4f",
                    st.reserved, st.segments, st.allocated, st.free_bytes, st.free_blocks, st.largest_free,
                    fragmentation(&st));
        fputc('\n', f);
    }
    if (rep->stats) {
        fprintf(f, "segments over time (seq reserved allocated segments free largest_free):\n");
        for (uint64_t i = 0; i < res->nseries; i++) {
            const rp_series_point *p = &res->series[i];
            fprintf(f, "  %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", p->seq,
                    p->reserved, p->allocated, p->segments, p->free_bytes, p->largest_free);
        }
        fprintf(f, "segment sizes obtained:\n");
        for (int b = 0; b < 64; b++)
            if (res->seg_sizes[b])
                fprintf(f, "  [%llu, %llu): %" PRIu64 "\n", 1ULL << b, b < 63 ? 2ULL << b : 0, res->seg_sizes[b]);
    }
    const rp_finding *w;
    uint64_t total;
    uint32_t n = rp_replay_warnings(r, &w, &total);
    if (n > TEXT_WARNINGS)
        n = TEXT_WARNINGS;  /* --json lists more */
    if (total)
        fprintf(f, "warnings: %" PRIu64 " (first %u shown)\n", total, n);
    for (uint32_t i = 0; i < n; i++)
        text_finding(rep, "  warning:", &w[i]);
}

void rp_output_print(const rp_output *rep, const rp_replay *r)
{
    if (rep->json)
        print_json(rep, r);
    else
        print_text(rep, r);
}
