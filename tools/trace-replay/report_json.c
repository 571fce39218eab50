/*
 * report_json.c - the report for tools (schema: docs/report-json.md).
 *
 * One JSON object.  Stacks are resolved to text here, so a consumer needs
 * neither the log nor the binaries.  The HTML report embeds this same object.
 */
#include "report.h"

#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "xalloc.h"

#define SITES_LISTED 200
#define FLAME_STACKS 2000
#define COLLECTIONS_LISTED 10000

static void process(rn_json *w, const rpt *r)
{
    const tf_header *h = tf_reader_header(r->reader);
    rn_json_obj(w, "process");
    rn_json_u64(w, "pid", h->pid);
    rn_json_u64(w, "ppid", h->ppid);
    rn_json_str(w, "hostname", h->hostname);
    rn_json_str(w, "cmdline", h->cmdline);
    rn_json_str(w, "exe", h->exe);
    rn_json_str(w, "python", rpt_python_version(r));
    char cuda[512];
    rpt_cuda_text(r, cuda, sizeof cuda);
    rn_json_i64(w, "cuda_runtime", rpt_cuda_runtime_version(r));
    rn_json_i64(w, "cuda_driver", rpt_cuda_driver_version(r));
    rn_json_str(w, "cuda", cuda);
    rn_json_str(w, "tracer", h->tracer_version);
    rn_json_str(w, "settings", h->settings);
    rn_json_u64(w, "wall_start_ns", h->wall_start_ns);
    rn_json_u64(w, "mono_start_ns", h->mono_start_ns);
    rn_json_arr(w, "info");
    for (uint32_t i = 0; i < tf_reader_info_count(r->reader); i++) {
        const char *key, *value;
        if (!tf_reader_info(r->reader, i, &key, &value))
            continue;
        rn_json_obj(w, NULL);
        rn_json_str(w, "key", key);
        rn_json_str(w, "value", value);
        rn_json_end_obj(w);
    }
    rn_json_end_arr(w);
    rn_json_end_obj(w);
}

static void log_state(rn_json *w, const rpt *r)
{
    rn_json_obj(w, "log");
    rn_json_str(w, "path", r->path);
    rn_json_bool(w, "clean_end", r->status->clean_end);
    rn_json_bool(w, "truncated", r->status->truncated);
    rn_json_u64(w, "corrupt_frames", r->status->corrupt_frames);
    rn_json_str(w, "damage", r->damage);
    rn_json_u64(w, "run", (uint64_t)r->run);
    rn_json_u64(w, "next_run_offset", r->status->next_run_offset);
    rn_json_end_obj(w);
}

static void counts(rn_json *w, const rpt *r)
{
    rn_json_u64(w, "events", r->events);
    rn_json_u64(w, "t_first_ns", r->t_first);
    rn_json_u64(w, "t_last_ns", r->t_last);
    rn_json_obj(w, "event_counts");
    for (uint32_t k = 32; k < TF_KIND_MAX; k++)
        if (r->kinds[k] && tf_kind_name(k))
            rn_json_u64(w, tf_kind_name(k), r->kinds[k]);
    rn_json_end_obj(w);
    rn_json_arr(w, "threads");
    for (uint32_t i = 0; i < r->nthreads; i++) {
        rn_json_obj(w, NULL);
        rn_json_u64(w, "tid", r->threads[i].tid);
        rn_json_str(w, "name", tf_reader_thread_name(r->reader, r->threads[i].tid));
        rn_json_str(w, "py_name", tf_reader_thread_py_name(r->reader, r->threads[i].tid));
        rn_json_u64(w, "events", r->threads[i].events);
        rn_json_end_obj(w);
    }
    rn_json_end_arr(w);
}

static void peak(rn_json *w, const char *key, const rpt_peak *p)
{
    rn_json_obj(w, key);
    rn_json_u64(w, "bytes", p->bytes);
    rn_json_u64(w, "seq", p->seq);
    rn_json_u64(w, "t_ns", p->t_ns);
    rn_json_end_obj(w);
}

static void memory(rn_json *w, const rpt *r)
{
    rn_json_obj(w, "memory");
    peak(w, "peak_reserved", &r->peak_reserved);
    peak(w, "peak_allocated", &r->peak_allocated);
    peak(w, "peak_host", &r->peak_host);
    rn_json_obj(w, "series");
    rn_json_u64(w, "t0_ns", r->series.t0);
    rn_json_u64(w, "bucket_ns", r->series.width);
    rn_json_arr(w, "points");
    for (uint32_t i = 0; i < r->series.n; i++) {
        const rpt_point *p = &r->series.p[i];
        rn_json_arr(w, NULL);
        rn_json_u64(w, NULL, p->t_ns);
        for (int m = 0; m < RPT_SERIES_MEASURES; m++)
            rn_json_u64(w, NULL, p->v[m]);
        rn_json_end_arr(w);
    }
    rn_json_end_arr(w);
    rn_json_end_obj(w);
    rn_json_end_obj(w);
}

/* The modules native frames are in (what a bundle must carry). */
static void modules(rn_json *w, const rpt *r, rn_stacks *st)
{
    char id[2 * 64 + 1];
    rn_json_arr(w, "modules");
    for (uint32_t i = 0; i < r->nmodules_on_stacks; i++) {
        const tf_module *m = tf_reader_module(r->reader, r->modules_on_stacks[i]);
        if (!m)
            continue;
        uint32_t n = m->build_id_len < 64 ? m->build_id_len : 64;
        for (uint32_t k = 0; k < n; k++)
            snprintf(id + 2 * k, 3, "%02x", m->build_id[k]);
        id[2 * n] = '\0';
        rn_json_obj(w, NULL);
        rn_json_u64(w, "id", m->id);
        rn_json_str(w, "path", m->path);
        rn_json_str(w, "build_id", n ? id : NULL);
        rn_json_u64(w, "base", m->base);
        rn_json_str(w, "file_differs", rn_stacks_module_differs(st, m));
        rn_json_end_obj(w);
    }
    rn_json_end_arr(w);
}

static void pools(rn_json *w, const rpt *r, rn_stacks *st)
{
    rn_json_arr(w, "pools");
    for (uint32_t i = 0; i < r->npools; i++) {
        const rpt_pool *p = &r->pools[i];
        rn_json_obj(w, NULL);
        rn_json_u64(w, "id", p->id);
        rn_json_str(w, "name", tf_reader_pool_name(r->reader, p->id));
        rn_json_u64(w, "ops", p->ops);
        rn_json_u64(w, "allocs", p->allocs);
        rn_json_u64(w, "frees", p->frees);
        rn_json_u64(w, "segments", p->segments);
        rn_json_u64(w, "peak_reserved", p->peak_reserved);
        rn_json_u64(w, "peak_allocated", p->peak_allocated);
        rn_json_u64(w, "reentries", p->reentries);
        if (p->reentries) {
            rn_json_obj(w, "first_reentry");
            rn_json_u64(w, "seq", p->first_reentry.seq);
            rn_json_u64(w, "reentered_op", p->reentered_op);
            rn_json_stacks(w, st, p->first_reentry.native_stack, p->first_reentry.py_stack);
            rn_json_end_obj(w);
        }
        rn_json_end_obj(w);
    }
    rn_json_end_arr(w);
}

static void site(rn_json *w, const rpt *r, rn_stacks *st, uint32_t i)
{
    const rpt_site *s = &r->sites[i];
    char buf[1024];
    rn_json_obj(w, NULL);
    rn_json_u64(w, "id", i);
    rpt_site_python(r, s, buf, sizeof buf);
    rn_json_str(w, "python", s->py_code ? buf : NULL);
    rpt_site_native(st, s, buf, sizeof buf);
    rn_json_str(w, "native", s->native_ip ? buf : NULL);
    rn_json_u64(w, "device_bytes", s->dev_bytes);
    rn_json_u64(w, "device_count", s->dev_count);
    rn_json_u64(w, "host_bytes", s->host_bytes);
    rn_json_u64(w, "host_count", s->host_count);
    rn_json_u64(w, "gc_device_bytes", s->gc_dev_bytes);
    rn_json_u64(w, "gc_device_count", s->gc_dev_count);
    rn_json_u64(w, "gc_host_bytes", s->gc_host_bytes);
    rn_json_u64(w, "gc_host_count", s->gc_host_count);
    rn_json_u64(w, "object_bytes", s->obj_bytes);
    rn_json_u64(w, "object_count", s->obj_count);
    rn_json_u64(w, "gc_object_bytes", s->gc_obj_bytes);
    rn_json_u64(w, "gc_object_count", s->gc_obj_count);
    rn_json_stacks(w, st, s->native_stack, s->py_stack);
    rn_json_end_obj(w);
}

/* The sites worth listing: the top of each table, each once. */
static void sites(rn_json *w, const rpt *r, rn_stacks *st)
{
    static const struct { int which; const char *key; } tables[] = {
        {'d', "top_device_sites"}, {'h', "top_host_sites"}, {'g', "gc_sites"},
        {'o', "gc_object_sites"},
    };
    char *listed = rp_xcalloc(r->nsites + 1, 1);
    rn_json_arr(w, "sites");
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++) {
        uint32_t n, *idx = rpt_sites_by(r, tables[t].which, &n);
        for (uint32_t i = 0; i < n && i < SITES_LISTED; i++)
            if (!listed[idx[i]]++)
                site(w, r, st, idx[i]);
        free(idx);
    }
    rn_json_end_arr(w);
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++) {
        uint32_t n, *idx = rpt_sites_by(r, tables[t].which, &n);
        rn_json_arr(w, tables[t].key);
        for (uint32_t i = 0; i < n && i < SITES_LISTED; i++)
            rn_json_u64(w, NULL, idx[i]);
        rn_json_end_arr(w);
        free(idx);
    }
    free(listed);
}

static void stack_tallies(rn_json *w, rn_stacks *st, const char *key, const rpt_stack_tally *tally, uint32_t n)
{
    rn_json_arr(w, key);
    for (uint32_t i = 0; i < n && i < FLAME_STACKS; i++) {
        const rpt_stack_tally *t = &tally[i];
        rn_json_obj(w, NULL);
        rn_json_u64(w, "bytes", t->bytes);
        rn_json_u64(w, "count", t->count);
        rn_json_stacks(w, st, t->native_stack, t->py_stack);
        rn_json_end_obj(w);
    }
    rn_json_end_arr(w);
}

static void finding(rn_json *w, rn_stacks *st, const rp_finding *f, int with_stacks)
{
    rn_json_obj(w, NULL);
    rn_json_str(w, "invariant", f->invariant);
    rn_json_str(w, "message", f->message);
    const struct { const char *key; const rp_site *s; } where[] = {{"at", &f->at}, {"other", &f->other}};
    for (int i = 0; i < 2; i++) {
        if (!where[i].s->seq)
            continue;
        rn_json_obj(w, where[i].key);
        rn_json_u64(w, "seq", where[i].s->seq);
        if (with_stacks)
            rn_json_stacks(w, st, where[i].s->native_stack, where[i].s->py_stack);
        rn_json_end_obj(w);
    }
    rn_json_end_obj(w);
}

static void checks(rn_json *w, const rpt *r, rn_stacks *st)
{
    rn_json_arr(w, "violations");
    for (uint32_t i = 0; i < r->nviolations; i++)
        finding(w, st, &r->violations[i], 1);
    rn_json_end_arr(w);
    rn_json_u64(w, "violations_total", r->total_violations);
    rn_json_arr(w, "warnings");
    for (uint32_t i = 0; i < r->nwarnings; i++)
        finding(w, st, &r->warnings[i], 0);
    rn_json_end_arr(w);
    rn_json_u64(w, "warnings_total", r->total_warnings);
}

static void model_check(rn_json *w, const rpt *r, rn_stacks *st)
{
    const rp_result *m = r->model;
    if (!m) {
        rn_json_null(w, "model_check");
        return;
    }
    rn_json_obj(w, "model_check");
    rn_json_str(w, "model", r->model_name);
    rn_json_bool(w, "violated", m->violated);
    if (m->violated) {
        rn_json_arr(w, "violation");
        finding(w, st, &m->violation, 1);
        rn_json_end_arr(w);
        rn_json_u64(w, "op_seq", m->op.seq);
    }
    rn_json_u64(w, "ops", m->ops);
    rn_json_u64(w, "matched", m->matched);
    rn_json_u64(w, "diverged", m->diverged);
    rn_json_u64(w, "diverged_before_violation", m->violated ? m->diverged_before_violation : m->diverged);
    rn_json_bool(w, "following", !(m->violated ? m->diverged_before_violation : m->diverged));
    rn_json_u64(w, "ambiguities", m->ambiguous);
    rn_json_arr(w, "notes");
    for (uint32_t i = 0; i < m->nnotes; i++)
        rn_json_str(w, NULL, m->notes[i].text);
    rn_json_end_arr(w);
    rn_json_end_obj(w);
}

/* Each type's places with most objects (a bug reached from thousands of
 * lines made a report of 88 MB, every place with its stacks), and every
 * type's totals. */
static void double_inits(rn_json *w, const rpt *r, rn_stacks *st)
{
    const rpt_double_init **order;
    uint32_t ntypes;
    rpt_dinit_type *types = rpt_double_inits_by_type(r, &order, &ntypes);
    rn_json_arr(w, "double_inits");
    for (uint32_t t = 0; t < ntypes; t++)
        for (uint32_t i = 0; i < types[t].places && i < RPT_DINIT_PLACES_LISTED; i++) {
            const rpt_double_init *d = order[types[t].first + i];
            rn_json_obj(w, NULL);
            rn_json_str(w, "type", tf_reader_string(r->reader, d->type_name, NULL));
            rn_json_u64(w, "count", d->count);
            rn_json_u64(w, "first_seq", d->first_seq);
            rn_json_u64(w, "object", d->first_obj);
            rn_json_stacks(w, st, d->native_stack, d->py_stack);
            rn_json_end_obj(w);
        }
    rn_json_end_arr(w);
    rn_json_arr(w, "double_init_types");
    for (uint32_t t = 0; t < ntypes; t++) {
        rn_json_obj(w, NULL);
        rn_json_str(w, "type", tf_reader_string(r->reader, types[t].type_name, NULL));
        rn_json_u64(w, "count", types[t].count);
        rn_json_u64(w, "places", types[t].places);
        rn_json_u64(w, "listed", types[t].places < RPT_DINIT_PLACES_LISTED ? types[t].places
                                                                           : RPT_DINIT_PLACES_LISTED);
        rn_json_end_obj(w);
    }
    rn_json_end_arr(w);
    free(order);
    free(types);
}

static void gc(rn_json *w, const rpt *r)
{
    rn_json_obj(w, "gc");
    rn_json_arr(w, "generations");
    for (int g = 0; g < 3; g++) {
        rn_json_obj(w, NULL);
        rn_json_i64(w, "generation", g);
        rn_json_u64(w, "collections", r->gc[g].collections);
        rn_json_u64(w, "collected", r->gc[g].collected);
        rn_json_u64(w, "uncollectable", r->gc[g].uncollectable);
        rn_json_u64(w, "pause_ns", r->gc[g].pause_ns);
        rn_json_u64(w, "max_pause_ns", r->gc[g].max_pause_ns);
        rn_json_end_obj(w);
    }
    rn_json_end_arr(w);
    rn_json_u64(w, "freed_in_collections_device_bytes", r->gc_dev_bytes);
    rn_json_u64(w, "freed_in_collections_host_bytes", r->gc_host_bytes);
    /* Objects collections freed (py_free), by site: sites' gc_object_ and
     * gc_object_sites; null when the log has no object allocations. */
    if (r->kinds[TF_EV_PY_ALLOC] || r->kinds[TF_EV_PY_FREE]) {
        rn_json_obj(w, "objects_collected");
        /* With every allocation recorded (py_allocs=1) the frees in
         * collections are too, even when there were none. */
        rn_json_bool(w, "recorded", r->kinds[TF_EV_PY_FREE] != 0 || rpt_setting_number(r, "py_allocs") == 1);
        rn_json_u64(w, "count", r->gc_obj_count);
        rn_json_u64(w, "bytes", r->gc_obj_bytes);
        rn_json_u64(w, "allocated_before_log", r->gc_obj_unknown);
        rn_json_bool(w, "segments_deleted", r->events_deleted);
        rn_json_bool(w, "after_fork", r->after_fork);
        rn_json_bool(w, "events_missing", r->events_missing);
        rn_json_end_obj(w);
    } else {
        rn_json_null(w, "objects_collected");
    }
    /* A chart has no use for more than a few thousand marks: a long run's
     * collections are sampled evenly, the longest pauses are in the totals. */
    uint32_t step = r->ncollections / COLLECTIONS_LISTED + 1;
    rn_json_arr(w, "open_at_end");
    const rpt_collection *open;
    for (uint32_t i = 0; (open = rpt_open_collection(r, i)); i++) {
        rn_json_obj(w, NULL);
        rn_json_u64(w, "seq", open->seq);
        rn_json_i64(w, "generation", open->generation);
        rn_json_u64(w, "tid", open->tid);
        rn_json_end_obj(w);
    }
    rn_json_end_arr(w);
    rn_json_u64(w, "collections_total", r->ncollections);
    rn_json_arr(w, "collections");
    for (uint32_t i = 0; i < r->ncollections; i += step) {
        const rpt_collection *c = &r->collections[i];
        rn_json_arr(w, NULL);
        rn_json_u64(w, NULL, c->t_start);
        rn_json_u64(w, NULL, c->t_stop);
        rn_json_i64(w, NULL, c->generation);
        rn_json_u64(w, NULL, c->tid);
        rn_json_end_arr(w);
    }
    rn_json_end_arr(w);
    rn_json_end_obj(w);
}

/* What kind of program this was, and what the recorder could not watch. */
static void coverage(rn_json *w, const rpt *r)
{
    rn_json_str(w, "shape", rpt_has_device(r) ? "device" : "python");
    rn_json_bool(w, "host_watched", rpt_host_watched(r));
    rn_json_arr(w, "not_watched");
    for (uint32_t i = 0; rpt_not_watched(r, i); i++)
        rn_json_str(w, NULL, rpt_not_watched(r, i));
    rn_json_end_arr(w);
}

int rpt_print_json(const rpt *r, rn_stacks *st, FILE *out)
{
    rn_json w;
    rn_json_init(&w, out);
    rn_json_obj(&w, NULL);
    rn_json_str(&w, "schema", "trace-replay-report/2");
    rp_verdict v;
    rpt_verdict(r, &v);
    rn_json_obj(&w, "verdict");
    rn_json_str(&w, "result", v.result);
    rn_json_u64(&w, "exit_status", (uint64_t)v.status);
    rn_json_str(&w, "text", v.text);
    rn_json_end_obj(&w);
    log_state(&w, r);
    process(&w, r);
    counts(&w, r);
    memory(&w, r);
    pools(&w, r, st);
    modules(&w, r, st);
    sites(&w, r, st);
    stack_tallies(&w, st, "device_stacks", r->dev_stacks, r->ndev_stacks);
    stack_tallies(&w, st, "host_stacks", r->host_stacks, r->nhost_stacks);
    coverage(&w, r);
    checks(&w, r, st);
    model_check(&w, r, st);
    double_inits(&w, r, st);
    gc(&w, r);
    rn_json_end_obj(&w);
    return rn_json_close(&w);
}
