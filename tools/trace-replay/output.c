/* output.c - text and JSON reports of a replay. */
#include "output.h"

#include <inttypes.h>
#include <string.h>

#include "json.h"
#include "text.h"

#define MAX_FRAMES 64
#define MAX_PY_FRAMES TF_PY_PUSH_DEPTH   /* every frame a reader keeps of a pushed stack */
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

/* The same, made safe for a terminal (text output only; JSON escapes its own). */
static const char *pool_text(const rp_output *rep, uint32_t pool, char *buf, size_t len)
{
    return rn_text(buf, len, pool_name(rep, pool));
}

/* The model of the pool a finding is about (res NULL: the first modelled
 * pool's); --model's word when no pool has one. */
static const char *pool_model_name(const rp_replay *r, const rp_result *res)
{
    for (uint32_t i = 0; i < rp_replay_pool_count(r); i++) {
        uint32_t id;
        const rp_model_ops *m;
        rp_model_stats st;
        rp_replay_pool_at(r, i, &id, &m, &st);
        if (m && (!res || !res->op.seq || res->op.pool == id))
            return m->name;
    }
    return "none";
}

static double fragmentation(const rp_model_stats *st)
{
    /* 0 when the free memory is one block, towards 1 when it is dust. */
    return st->free_bytes ? 1.0 - (double)st->largest_free / (double)st->free_bytes : 0.0;
}

/* ------------------------------------------------------------------- JSON */

static void json_stacks(const rp_output *rep, rn_json *j, uint32_t native, uint32_t py)
{
    rn_json_stacks(j, rep->stacks, native, py);
}

static void json_opref(const rp_output *rep, rn_json *j, const char *key, const rp_opref *o)
{
    rn_json_obj(j, key);
    rn_json_u64(j, "seq", o->seq);
    rn_json_str(j, "kind", op_name(o));
    if (o->kind != TF_EV_GC_START) {
        rn_json_u64(j, "pool", o->pool);
        rn_json_str(j, "pool_name", pool_name(rep, o->pool));
        rn_json_hex(j, "arg", o->arg);
    }
    rn_json_end_obj(j);
}

static void json_finding(const rp_output *rep, rn_json *j, const rp_finding *f)
{
    rn_json_u64(j, "seq", f->at.seq);
    rn_json_str(j, "invariant", f->invariant);
    rn_json_str(j, "message", f->message);
    json_stacks(rep, j, f->at.native_stack, f->at.py_stack);
    if (f->other.seq) {
        rn_json_obj(j, "other");
        rn_json_u64(j, "seq", f->other.seq);
        json_stacks(rep, j, f->other.native_stack, f->other.py_stack);
        rn_json_end_obj(j);
    }
}

static void json_violation(const rp_output *rep, rn_json *j, const rp_result *res)
{
    if (!res->violated) {
        rn_json_null(j, "violation");
        return;
    }
    rn_json_obj(j, "violation");
    json_finding(rep, j, &res->violation);
    rn_json_arr(j, "broken");
    for (uint32_t i = 0; i < res->nbroken; i++) {
        rn_json_obj(j, NULL);
        rn_json_str(j, "invariant", res->broken[i].invariant);
        rn_json_str(j, "message", res->broken[i].message);
        rn_json_bool(j, "warning", res->broken[i].warning);
        rn_json_end_obj(j);
    }
    rn_json_end_arr(j);
    if (res->op.seq)
        json_opref(rep, j, "op", &res->op);
    else
        rn_json_null(j, "op");
    rn_json_arr(j, "nested_in");
    for (uint32_t i = 0; i < res->nnested; i++)
        json_opref(rep, j, NULL, &res->nested_in[i]);
    rn_json_end_arr(j);
    rn_json_arr(j, "reentries");
    for (uint32_t i = 0; i < res->nreentries; i++) {
        const rp_reentry *re = &res->reentries[i];
        rn_json_obj(j, NULL);
        rn_json_u64(j, "op_seq", re->op_seq);
        rn_json_str(j, "point", re->point ? re->point : "after the operation");
        rn_json_u64(j, "gc_seq", re->gc_seq);
        rn_json_u64(j, "first_nested_seq", re->nested_seq);
        rn_json_u64(j, "nested_ops", re->nested_ops);
        rn_json_obj(j, "gc");
        json_stacks(rep, j, re->gc_native_stack, re->gc_py_stack);
        rn_json_end_obj(j);
        rn_json_end_obj(j);
    }
    rn_json_end_arr(j);
    rn_json_end_obj(j);
}

static void json_pools(const rp_output *rep, rn_json *j, const rp_replay *r)
{
    rn_json_arr(j, "pools");
    for (uint32_t i = 0; i < rp_replay_pool_count(r); i++) {
        uint32_t id;
        const rp_model_ops *m;
        rp_model_stats st;
        rp_replay_pool_at(r, i, &id, &m, &st);
        rn_json_obj(j, NULL);
        rn_json_u64(j, "id", id);
        rn_json_str(j, "name", pool_name(rep, id));
        rn_json_str(j, "model", m ? m->name : "none");
        rn_json_u64(j, "reserved", st.reserved);
        rn_json_u64(j, "allocated", st.allocated);
        rn_json_u64(j, "segments", st.segments);
        rn_json_u64(j, "free_bytes", st.free_bytes);
        rn_json_u64(j, "free_blocks", st.free_blocks);
        rn_json_u64(j, "largest_free", st.largest_free);
        rn_json_double(j, "fragmentation", fragmentation(&st));
        rn_json_end_obj(j);
    }
    rn_json_end_arr(j);
}

static void json_stats(rn_json *j, const rp_result *res)
{
    rn_json_obj(j, "stats");
    rn_json_u64(j, "peak_reserved_seq", res->peak_reserved_seq);
    rn_json_u64(j, "peak_allocated_seq", res->peak_allocated_seq);
    rn_json_u64(j, "operations", res->ops);
    rn_json_arr(j, "series");
    for (uint64_t i = 0; i < res->nseries; i++) {
        const rp_series_point *p = &res->series[i];
        rn_json_obj(j, NULL);
        rn_json_u64(j, "seq", p->seq);
        rn_json_u64(j, "reserved", p->reserved);
        rn_json_u64(j, "allocated", p->allocated);
        rn_json_u64(j, "segments", p->segments);
        rn_json_u64(j, "free_bytes", p->free_bytes);
        rn_json_u64(j, "largest_free", p->largest_free);
        rn_json_end_obj(j);
    }
    rn_json_end_arr(j);
    rn_json_arr(j, "segment_sizes");
    for (int b = 0; b < 64; b++) {
        if (!res->seg_sizes[b])
            continue;
        rn_json_obj(j, NULL);
        rn_json_u64(j, "min_bytes", 1ULL << b);
        rn_json_u64(j, "count", res->seg_sizes[b]);
        rn_json_end_obj(j);
    }
    rn_json_end_arr(j);
    rn_json_end_obj(j);
}

static void json_explore(const rp_output *rep, rn_json *j, const rp_explore_result *x)
{
    rn_json_obj(j, "explore");
    rn_json_u64(j, "probes", x->probes);
    if (!x->found) {
        rn_json_null(j, "found");
        rn_json_end_obj(j);
        return;
    }
    rn_json_obj(j, "found");
    json_finding(rep, j, &x->finding);
    json_opref(rep, j, "op", &x->op);
    rn_json_str(j, "point", x->point);
    rn_json_u64(j, "gc_seq", x->gc_seq);
    rn_json_arr(j, "injected_frees");
    for (uint32_t i = 0; i < x->nfrees; i++)
        rn_json_hex(j, NULL, x->frees[i]);
    rn_json_end_arr(j);
    rn_json_end_obj(j);
    rn_json_end_obj(j);
}

static void json_follow(rn_json *j, const rp_follow_report *fr)
{
    rn_json_obj(j, "follow");
    rn_json_u64(j, "pid", (uint64_t)fr->pid);
    rn_json_str(j, "ended", fr->ended);
    rn_json_str(j, "on_violation", fr->on_violation);
    rn_json_str(j, "action", fr->action);
    rn_json_u64(j, "violations", fr->violations);
    if (fr->found_ns) {
        rn_json_u64(j, "event_ns", fr->event_ns);
        rn_json_u64(j, "found_ns", fr->found_ns);
    }
    rn_json_u64(j, "checkpoints", fr->checkpoints);
    rn_json_u64(j, "checkpoint_bytes", fr->checkpoint_bytes);
    rn_json_u64(j, "checkpoint_write_ns", fr->checkpoint_write_ns);
    rn_json_u64(j, "checkpoints_deleted", fr->checkpoints_deleted);
    rn_json_str(j, "checkpoint_error", fr->checkpoint_error);
    rn_json_end_obj(j);
}

void rp_output_verdict(const rp_output *rep, const rp_replay *r, rp_verdict *v);

static void print_json(const rp_output *rep, const rp_replay *r)
{
    const rp_result *res = rp_replay_result(r);
    rn_json j;
    rn_json_init(&j, rep->out);
    rn_json_obj(&j, NULL);
    rp_verdict v;
    rp_output_verdict(rep, r, &v);
    rn_json_str(&j, "command", rep->command);
    rn_json_str(&j, "status", v.result);
    rn_json_obj(&j, "verdict");
    rn_json_str(&j, "result", v.result);
    rn_json_u64(&j, "exit_status", (uint64_t)v.status);
    rn_json_str(&j, "text", v.text);
    rn_json_end_obj(&j);
    rn_json_u64(&j, "events", res->events);
    rn_json_str(&j, "model", rep->model);
    rn_json_u64(&j, "peak_reserved", res->peak_reserved);
    rn_json_u64(&j, "peak_allocated", res->peak_allocated);
    rn_json_obj(&j, "fidelity");
    rn_json_u64(&j, "matched", res->matched);
    rn_json_u64(&j, "diverged", res->diverged);
    rn_json_u64(&j, "first_diverged_seq", res->first_diverged_seq);
    rn_json_u64(&j, "diverged_before_violation", res->violated ? res->diverged_before_violation : res->diverged);
    rn_json_bool(&j, "following", !(res->violated ? res->diverged_before_violation : res->diverged));
    rn_json_end_obj(&j);
    rn_json_u64(&j, "ambiguities", res->ambiguous);
    rn_json_arr(&j, "notes");
    for (uint32_t i = 0; i < res->nnotes; i++)
        rn_json_str(&j, NULL, res->notes[i].text);
    rn_json_end_arr(&j);
    rn_json_bool(&j, "clean_end", rep->clean_end);
    rn_json_str(&j, "damage", rep->damage);
    rn_json_u64(&j, "run", (uint64_t)rep->run);
    rn_json_u64(&j, "next_run_offset", rep->next_run);
    if (res->history_lost_seq)
        rn_json_u64(&j, "history_lost_at", res->history_lost_seq);
    else
        rn_json_null(&j, "history_lost_at");
    rn_json_str(&j, "checkpoint", rep->checkpoint_path);
    if (rep->checkpoint_path)
        rn_json_u64(&j, "checkpoint_seq", rep->checkpoint_seq);
    else
        rn_json_null(&j, "checkpoint_seq");
    rn_json_str(&j, "checkpoint_note", rep->checkpoint);
    json_pools(rep, &j, r);
    json_violation(rep, &j, res);
    const rp_finding *w;
    uint64_t total;
    uint32_t n = rp_replay_warnings(r, &w, &total);
    rn_json_u64(&j, "warnings_total", total);
    rn_json_arr(&j, "warnings");
    for (uint32_t i = 0; i < n; i++) {
        rn_json_obj(&j, NULL);
        json_finding(rep, &j, &w[i]);
        rn_json_end_obj(&j);
    }
    rn_json_end_arr(&j);
    if (rep->stats)
        json_stats(&j, res);
    if (rep->explore)
        json_explore(rep, &j, rep->explore);
    if (rep->follow)
        json_follow(&j, rep->follow);
    rn_json_end_obj(&j);
    rn_json_close(&j);
}

/* ------------------------------------------------------------------- text */

/* Both stacks, the program's code first: the Python stack, then the native
 * one with runs of the interpreter's, start-up and tracer frames folded into
 * one line each (--full-stacks shows every frame). */
static void text_stacks(const rp_output *rep, const char *indent, uint32_t native, uint32_t py)
{
    FILE *f = rep->out;
    const rn_native_frame *nf[MAX_FRAMES];
    const rn_py_frame *pf[MAX_PY_FRAMES];
    char a[512], b[512], c[256];
    uint32_t n = rn_stacks_py(rep->stacks, py, pf, MAX_PY_FRAMES), depth = rn_stacks_py_depth(rep->stacks, py);
    if (n)
        fprintf(f, "%spython stack:\n", indent);
    for (uint32_t i = 0; i < n;) {
        uint32_t run = rep->full_stacks ? 1 : rn_py_run(pf, n, i);
        uint32_t shown = run > RN_PY_RUN_SHOWN ? RN_PY_RUN_SHOWN : run;
        for (uint32_t k = i; k < i + shown; k++) {
            if (rn_py_frame_is_cut(pf[k]))
                fprintf(f, "%s  ... outer frames not recorded\n", indent);
            else
                fprintf(f, "%s  #%-2u %s:%u in %s\n", indent, k, rn_text(a, sizeof a, pf[k]->file),
                        pf[k]->line, rn_text(b, sizeof b, pf[k]->function));
        }
        if (run > shown)
            fprintf(f, "%s  [the frame above repeated %u more times]\n", indent, run - shown);
        i += run;
    }
    if (depth > n)
        fprintf(f, "%s  ... %u more frames not shown\n", indent, depth - n);
    n = rn_stacks_native(rep->stacks, native, nf, MAX_FRAMES);
    if (n)
        fprintf(f, "%snative stack:\n", indent);
    for (uint32_t i = 0; i < n;) {
        const char *what = NULL;
        uint32_t k = rep->full_stacks ? 1 : rn_fold_next(nf, n, i, &what);
        if (what) {
            fprintf(f, "%s  ... %u %s frames\n", indent, k, what);
            i += k;
            continue;
        }
        fprintf(f, "%s  #%-2u 0x%" PRIx64, indent, i, nf[i]->ip);
        if (nf[i]->module)
            fprintf(f, " %s+0x%" PRIx64, rn_text(a, sizeof a, nf[i]->module), nf[i]->offset);
        /* Code inlined into the function: its name first, as the file and
         * line are its code's. */
        if (nf[i]->inlined)
            fprintf(f, " %s inlined in", rn_text(b, sizeof b, nf[i]->inlined));
        if (nf[i]->function)
            fprintf(f, " %s", rn_text(b, sizeof b, nf[i]->function));
        else if (nf[i]->inlined)
            fputs(" ??", f);
        if (nf[i]->file)
            fprintf(f, " (%s:%u)", rn_text(c, sizeof c, nf[i]->file), nf[i]->line);
        fputc('\n', f);
        i++;
    }
    depth = rn_stacks_native_depth(rep->stacks, native);
    if (depth > n)
        fprintf(f, "%s  ... %u more frames not shown\n", indent, depth - n);
    if (rn_native_walk_cut(nf, n))
        fprintf(f, "%s  %s\n", indent, RN_NATIVE_CUT_TEXT);
}

static void text_op(const rp_output *rep, const rp_opref *o)
{
    char name[256];
    if (o->kind == TF_EV_GC_START)
        fprintf(rep->out, "collection (seq %" PRIu64 ")", o->seq);
    else
        fprintf(rep->out, "%s 0x%" PRIx64 " on pool %u \"%s\" (seq %" PRIu64 ")", op_name(o), o->arg, o->pool,
                pool_text(rep, o->pool, name, sizeof name), o->seq);
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
    int unwatched = rp_verdict_unwatched_finding(rp_verdict_pool_unwatched(rep->reader), res->by_model,
                                                 &res->violation);
    text_finding(rep, unwatched ? "FINDING (perhaps not the pool's: see the verdict)" : "VIOLATION",
                 &res->violation);
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

/* The INFO a fork's child's log starts with (its first event comes after a
 * gap: the reader marks it), or NULL. */
static const char *forked_from(const rp_output *rep)
{
    for (uint32_t i = 0; rep->reader && i < tf_reader_info_count(rep->reader); i++) {
        const char *key, *value;
        if (tf_reader_info(rep->reader, i, &key, &value) && key && !strcmp(key, "forked"))
            return value;
    }
    return NULL;
}

static void print_text(const rp_output *rep, const rp_replay *r)
{
    FILE *f = rep->out;
    const rp_result *res = rp_replay_result(r);
    if (rep->damage)
        fprintf(f, "note: %s\n", rep->damage);
    if (rep->run > 1)
        fprintf(f, "note: log %d of this file (logs joined with cat)\n", rep->run);
    if (rep->next_run)
        fprintf(f, "note: another log follows in this file at byte %" PRIu64 " (logs joined with cat); this is log "
                   "%d of it, --run %d replays the next\n", rep->next_run, rep->run, rep->run + 1);
    if (rep->checkpoint)
        fprintf(f, "note: %s\n", rep->checkpoint);
    const char *forked = forked_from(rep);
    if (res->history_lost_seq && forked)
        fprintf(f, "note: a fork's child (%s): the checks go on with partial history (a free of a block from "
                   "before the fork is not a finding) and the pool models are off\n", forked);
    else if (res->history_lost_seq)
        fprintf(f, "note: events are missing before event %" PRIu64 ": from there the checks go on with partial "
                   "history (a free of a block from before is not a finding) and the pool models are off\n",
                res->history_lost_seq);
    if (res->violated && !rep->violations_shown)
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
    char b1[32], b2[32], b3[32], b4[32], b5[32];
    fprintf(f, "%s: %" PRIu64 " events, model %s\n", rep->command, res->events, rep->model);
    /* How far the model followed the log is said in the verdict line; the
     * models' notes and the ambiguous collections in detail here. */
    char note[512];
    for (uint32_t i = 0; i < res->nnotes; i++)
        fprintf(f, "  model note: %s\n", rn_text(note, sizeof note, res->notes[i].text));
    if (res->notes_dropped)
        fprintf(f, "  model note: %u more not shown\n", res->notes_dropped);
    if (res->ambiguous)
        fprintf(f, "  ambiguous: %" PRIu64 " collection(s) that no stack places (the first at seq %" PRIu64
                   ") break the pool started in one place and not in another; not a violation: the warnings "
                   "\"ambiguity\" give both outcomes\n", res->ambiguous, res->first_ambiguous_seq);
    rn_bytes(res->peak_reserved, b1, sizeof b1);
    rn_bytes(res->peak_allocated, b2, sizeof b2);
    fprintf(f, "peak reserved %s (seq %" PRIu64 "), peak allocated %s (seq %" PRIu64 ")\n", b1,
            res->peak_reserved_seq, b2, res->peak_allocated_seq);
    if (rep->follow) {
        const rp_follow_report *fr = rep->follow;
        fprintf(f, "follow: process %d, %s; %" PRIu64 " violation(s) found, on violation: %s\n", fr->pid, fr->ended,
                fr->violations, fr->on_violation);
        if (fr->found_ns)
            fprintf(f, "follow: found %.1f ms after the event it was found at was recorded\n",
                    (double)(fr->found_ns - fr->event_ns) / 1e6);
        if (fr->action)
            fprintf(f, "%s\n", fr->action);
        if (fr->checkpoints)
            fprintf(f, "follow: %" PRIu64 " checkpoint(s) of the replay's state written beside the segments (the last "
                       "%" PRIu64 " bytes, in %.1f ms); %" PRIu64 " deleted with their segments\n",
                    fr->checkpoints, fr->checkpoint_bytes, (double)fr->checkpoint_write_ns / 1e6,
                    fr->checkpoints_deleted);
        if (fr->checkpoint_error)
            fprintf(f, "follow: a checkpoint could not be written: %s\n", fr->checkpoint_error);
    }
    fprintf(f, "fidelity: %" PRIu64 " matched, %" PRIu64 " diverged", res->matched, res->diverged);
    if (res->diverged)
        fprintf(f, " (first at seq %" PRIu64 ")", res->first_diverged_seq);
    fputc('\n', f);
    for (uint32_t i = 0; i < rp_replay_pool_count(r); i++) {
        uint32_t id;
        const rp_model_ops *m;
        rp_model_stats st;
        rp_replay_pool_at(r, i, &id, &m, &st);
        char name[256];
        fprintf(f, "pool %u \"%s\": model %s", id, pool_text(rep, id, name, sizeof name), m ? m->name : "none");
        if (m) {
            rn_bytes(st.reserved, b1, sizeof b1);
            rn_bytes(st.allocated, b3, sizeof b3);
            rn_bytes(st.free_bytes, b4, sizeof b4);
            rn_bytes(st.largest_free, b5, sizeof b5);
            fprintf(f, ", reserved %s in %" PRIu64 " segments, allocated %s, free %s in %" PRIu64
                       " blocks (largest %s), fragmentation %.4f",
                    b1, st.segments, b3, b4, st.free_blocks, b5, fragmentation(&st));
        }
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
    rp_verdict v;
    rp_output_verdict(rep, r, &v);
    fprintf(f, "verdict: %s\n", v.text);
}

void rp_output_verdict(const rp_output *rep, const rp_replay *r, rp_verdict *v)
{
    const rp_result *res = rp_replay_result(r);
    const rp_explore_result *x = rep->explore;
    char source[128];
    rp_verdict_facts f = {
        .model = rep->model, .ops = res->ops, .matched = res->matched, .diverged = res->diverged,
        .first_diverged_seq = res->first_diverged_seq, .damage = rep->damage, .source = source,
        .by_model = res->violated && res->by_model,
        .diverged_before = res->violated ? res->diverged_before_violation : res->diverged,
        .ambiguous = res->ambiguous,
        .unplaced = res->unplaced, .first_unplaced_seq = res->first_unplaced_seq,
        .no_native_stacks = rp_verdict_no_native_stacks(rep->reader),
        .pool_unwatched = rp_verdict_pool_unwatched(rep->reader),
    };
    /* Models asked for (by name, or auto with a pool it chose one for)
     * and then off after a gap with no checkpoint. */
    if (res->history_lost_seq && rep->model && strcmp(rep->model, "none") &&
        (res->ops || rp_replay_pools_selected(r)))
        f.models_off_from = res->history_lost_seq;
    if (res->violated) {
        f.violation = &res->violation;
        if (res->by_model)
            snprintf(source, sizeof source, "pool model %s", pool_model_name(r, res));
        else
            snprintf(source, sizeof source, "model-free checks");
    } else if (x && x->found) {
        f.violation = &x->finding;
        f.injected = 1;
        f.point = x->point;
        snprintf(source, sizeof source, "model %s", pool_model_name(r, NULL));
    }
    rp_verdict_make(v, &f);
}

void rp_output_violation(const rp_output *rep, const rp_result *v)
{
    if (rep->json) {
        rn_json j;
        rn_json_init(&j, rep->out);
        rn_json_obj(&j, NULL);
        rn_json_str(&j, "kind", "violation");
        json_violation(rep, &j, v);
        rn_json_end_obj(&j);
        rn_json_close(&j);
    } else {
        text_violation(rep, v);
    }
    fflush(rep->out);
}

void rp_output_print(const rp_output *rep, const rp_replay *r)
{
    if (rep->json)
        print_json(rep, r);
    else
        print_text(rep, r);
}
