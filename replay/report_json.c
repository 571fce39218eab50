/*
 * report_json.c - the report for tools (schema: replay/REPORT_JSON.md).
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

/* The same lines the text report prints. */
void rpt_json_stacks(rp_json *w, rp_stacks *st, uint32_t py, uint32_t native)
{
    rp_py_frame pf[RPT_MAX_FRAMES];
    rp_native_frame nf[RPT_MAX_FRAMES];
    char line[1024];
    uint32_t n = rp_stacks_py(st, py, pf, RPT_MAX_FRAMES);
    rp_json_arr(w, "py_stack");
    for (uint32_t i = 0; i < n; i++) {
        rpt_py_frame_text(&pf[i], line, sizeof line);
        rp_json_str(w, NULL, line);
    }
    rp_json_end_arr(w);
    n = rp_stacks_native(st, native, nf, RPT_MAX_FRAMES);
    rp_json_arr(w, "native_stack");
    for (uint32_t i = 0; i < n; i++) {
        rpt_native_frame_text(&nf[i], line, sizeof line);
        rp_json_str(w, NULL, line);
    }
    rp_json_end_arr(w);
}

static void process(rp_json *w, const rpt *r)
{
    const tf_header *h = tf_reader_header(r->reader);
    rp_json_obj(w, "process");
    rp_json_u64(w, "pid", h->pid);
    rp_json_u64(w, "ppid", h->ppid);
    rp_json_str(w, "hostname", h->hostname);
    rp_json_str(w, "cmdline", h->cmdline);
    rp_json_str(w, "exe", h->exe);
    rp_json_str(w, "python", rpt_python_version(r));
    char cuda[512];
    rpt_cuda_text(r, cuda, sizeof cuda);
    rp_json_i64(w, "cuda_runtime", rpt_cuda_runtime_version(r));
    rp_json_i64(w, "cuda_driver", rpt_cuda_driver_version(r));
    rp_json_str(w, "cuda", cuda);
    rp_json_str(w, "tracer", h->tracer_version);
    rp_json_str(w, "settings", h->settings);
    rp_json_u64(w, "wall_start_ns", h->wall_start_ns);
    rp_json_u64(w, "mono_start_ns", h->mono_start_ns);
    rp_json_arr(w, "info");
    for (uint32_t i = 0; i < tf_reader_info_count(r->reader); i++) {
        const char *key, *value;
        if (!tf_reader_info(r->reader, i, &key, &value))
            continue;
        rp_json_obj(w, NULL);
        rp_json_str(w, "key", key);
        rp_json_str(w, "value", value);
        rp_json_end_obj(w);
    }
    rp_json_end_arr(w);
    rp_json_end_obj(w);
}

static void log_state(rp_json *w, const rpt *r)
{
    rp_json_obj(w, "log");
    rp_json_str(w, "path", r->path);
    rp_json_bool(w, "clean_end", r->status->clean_end);
    rp_json_bool(w, "truncated", r->status->truncated);
    rp_json_u64(w, "corrupt_frames", r->status->corrupt_frames);
    rp_json_str(w, "damage", r->damage);
    rp_json_end_obj(w);
}

static void counts(rp_json *w, const rpt *r)
{
    rp_json_u64(w, "events", r->events);
    rp_json_u64(w, "t_first_ns", r->t_first);
    rp_json_u64(w, "t_last_ns", r->t_last);
    rp_json_obj(w, "event_counts");
    for (uint32_t k = 32; k < TF_KIND_MAX; k++)
        if (r->kinds[k] && tf_kind_name(k))
            rp_json_u64(w, tf_kind_name(k), r->kinds[k]);
    rp_json_end_obj(w);
    rp_json_arr(w, "threads");
    for (uint32_t i = 0; i < r->nthreads; i++) {
        rp_json_obj(w, NULL);
        rp_json_u64(w, "tid", r->threads[i].tid);
        rp_json_str(w, "name", tf_reader_thread_name(r->reader, r->threads[i].tid));
        rp_json_str(w, "py_name", tf_reader_thread_py_name(r->reader, r->threads[i].tid));
        rp_json_u64(w, "events", r->threads[i].events);
        rp_json_end_obj(w);
    }
    rp_json_end_arr(w);
}

static void peak(rp_json *w, const char *key, const rpt_peak *p)
{
    rp_json_obj(w, key);
    rp_json_u64(w, "bytes", p->bytes);
    rp_json_u64(w, "seq", p->seq);
    rp_json_u64(w, "t_ns", p->t_ns);
    rp_json_end_obj(w);
}

static void memory(rp_json *w, const rpt *r)
{
    rp_json_obj(w, "memory");
    peak(w, "peak_reserved", &r->peak_reserved);
    peak(w, "peak_allocated", &r->peak_allocated);
    peak(w, "peak_host", &r->peak_host);
    rp_json_obj(w, "series");
    rp_json_u64(w, "t0_ns", r->series.t0);
    rp_json_u64(w, "bucket_ns", r->series.width);
    rp_json_arr(w, "points");
    for (uint32_t i = 0; i < r->series.n; i++) {
        const rpt_point *p = &r->series.p[i];
        rp_json_arr(w, NULL);
        rp_json_u64(w, NULL, p->t_ns);
        for (int m = 0; m < RPT_SERIES_MEASURES; m++)
            rp_json_u64(w, NULL, p->v[m]);
        rp_json_end_arr(w);
    }
    rp_json_end_arr(w);
    rp_json_end_obj(w);
    rp_json_end_obj(w);
}

/* The modules native frames are in (what a bundle must carry). */
static void modules(rp_json *w, const rpt *r)
{
    char id[2 * 64 + 1];
    rp_json_arr(w, "modules");
    for (uint32_t i = 0; i < r->nmodules_on_stacks; i++) {
        const tf_module *m = tf_reader_module(r->reader, r->modules_on_stacks[i]);
        if (!m)
            continue;
        uint32_t n = m->build_id_len < 64 ? m->build_id_len : 64;
        for (uint32_t k = 0; k < n; k++)
            snprintf(id + 2 * k, 3, "%02x", m->build_id[k]);
        id[2 * n] = '\0';
        rp_json_obj(w, NULL);
        rp_json_u64(w, "id", m->id);
        rp_json_str(w, "path", m->path);
        rp_json_str(w, "build_id", n ? id : NULL);
        rp_json_u64(w, "base", m->base);
        rp_json_end_obj(w);
    }
    rp_json_end_arr(w);
}

static void pools(rp_json *w, const rpt *r, rp_stacks *st)
{
    rp_json_arr(w, "pools");
    for (uint32_t i = 0; i < r->npools; i++) {
        const rpt_pool *p = &r->pools[i];
        rp_json_obj(w, NULL);
        rp_json_u64(w, "id", p->id);
        rp_json_str(w, "name", tf_reader_pool_name(r->reader, p->id));
        rp_json_u64(w, "ops", p->ops);
        rp_json_u64(w, "allocs", p->allocs);
        rp_json_u64(w, "frees", p->frees);
        rp_json_u64(w, "segments", p->segments);
        rp_json_u64(w, "peak_reserved", p->peak_reserved);
        rp_json_u64(w, "peak_allocated", p->peak_allocated);
        rp_json_u64(w, "reentries", p->reentries);
        if (p->reentries) {
            rp_json_obj(w, "first_reentry");
            rp_json_u64(w, "seq", p->first_reentry.seq);
            rp_json_u64(w, "reentered_op", p->reentered_op);
            rpt_json_stacks(w, st, p->first_reentry.py_stack, p->first_reentry.native_stack);
            rp_json_end_obj(w);
        }
        rp_json_end_obj(w);
    }
    rp_json_end_arr(w);
}

static void site(rp_json *w, const rpt *r, rp_stacks *st, uint32_t i)
{
    const rpt_site *s = &r->sites[i];
    char buf[1024];
    rp_json_obj(w, NULL);
    rp_json_u64(w, "id", i);
    rpt_site_python(r, s, buf, sizeof buf);
    rp_json_str(w, "python", s->py_code ? buf : NULL);
    rpt_site_native(st, s, buf, sizeof buf);
    rp_json_str(w, "native", s->native_ip ? buf : NULL);
    rp_json_u64(w, "device_bytes", s->dev_bytes);
    rp_json_u64(w, "device_count", s->dev_count);
    rp_json_u64(w, "host_bytes", s->host_bytes);
    rp_json_u64(w, "host_count", s->host_count);
    rp_json_u64(w, "gc_device_bytes", s->gc_dev_bytes);
    rp_json_u64(w, "gc_device_count", s->gc_dev_count);
    rp_json_u64(w, "gc_host_bytes", s->gc_host_bytes);
    rp_json_u64(w, "gc_host_count", s->gc_host_count);
    rpt_json_stacks(w, st, s->py_stack, s->native_stack);
    rp_json_end_obj(w);
}

/* The sites worth listing: the top of each table, each once. */
static void sites(rp_json *w, const rpt *r, rp_stacks *st)
{
    static const struct { int which; const char *key; } tables[] = {
        {'d', "top_device_sites"}, {'h', "top_host_sites"}, {'g', "gc_sites"},
    };
    char *listed = rp_xcalloc(r->nsites + 1, 1);
    rp_json_arr(w, "sites");
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++) {
        uint32_t n, *idx = rpt_sites_by(r, tables[t].which, &n);
        for (uint32_t i = 0; i < n && i < SITES_LISTED; i++)
            if (!listed[idx[i]]++)
                site(w, r, st, idx[i]);
        free(idx);
    }
    rp_json_end_arr(w);
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++) {
        uint32_t n, *idx = rpt_sites_by(r, tables[t].which, &n);
        rp_json_arr(w, tables[t].key);
        for (uint32_t i = 0; i < n && i < SITES_LISTED; i++)
            rp_json_u64(w, NULL, idx[i]);
        rp_json_end_arr(w);
        free(idx);
    }
    free(listed);
}

static void stack_tallies(rp_json *w, rp_stacks *st, const char *key, const rpt_stack_tally *tally, uint32_t n)
{
    rp_json_arr(w, key);
    for (uint32_t i = 0; i < n && i < FLAME_STACKS; i++) {
        const rpt_stack_tally *t = &tally[i];
        rp_json_obj(w, NULL);
        rp_json_u64(w, "bytes", t->bytes);
        rp_json_u64(w, "count", t->count);
        rpt_json_stacks(w, st, t->py_stack, t->native_stack);
        rp_json_end_obj(w);
    }
    rp_json_end_arr(w);
}

static void finding(rp_json *w, rp_stacks *st, const rp_finding *f, int with_stacks)
{
    rp_json_obj(w, NULL);
    rp_json_str(w, "invariant", f->invariant);
    rp_json_str(w, "message", f->message);
    const struct { const char *key; const rp_site *s; } where[] = {{"at", &f->at}, {"other", &f->other}};
    for (int i = 0; i < 2; i++) {
        if (!where[i].s->seq)
            continue;
        rp_json_obj(w, where[i].key);
        rp_json_u64(w, "seq", where[i].s->seq);
        if (with_stacks)
            rpt_json_stacks(w, st, where[i].s->py_stack, where[i].s->native_stack);
        rp_json_end_obj(w);
    }
    rp_json_end_obj(w);
}

static void checks(rp_json *w, const rpt *r, rp_stacks *st)
{
    rp_json_arr(w, "violations");
    for (uint32_t i = 0; i < r->nviolations; i++)
        finding(w, st, &r->violations[i], 1);
    rp_json_end_arr(w);
    rp_json_u64(w, "violations_total", r->total_violations);
    rp_json_arr(w, "warnings");
    for (uint32_t i = 0; i < r->nwarnings; i++)
        finding(w, st, &r->warnings[i], 0);
    rp_json_end_arr(w);
    rp_json_u64(w, "warnings_total", r->total_warnings);
}

static void model_check(rp_json *w, const rpt *r, rp_stacks *st)
{
    const rp_result *m = r->model;
    if (!m) {
        rp_json_null(w, "model_check");
        return;
    }
    rp_json_obj(w, "model_check");
    rp_json_str(w, "model", r->model_name);
    rp_json_bool(w, "violated", m->violated);
    if (m->violated) {
        rp_json_arr(w, "violation");
        finding(w, st, &m->violation, 1);
        rp_json_end_arr(w);
        rp_json_u64(w, "op_seq", m->op.seq);
    }
    rp_json_u64(w, "ops", m->ops);
    rp_json_u64(w, "matched", m->matched);
    rp_json_u64(w, "diverged", m->diverged);
    rp_json_end_obj(w);
}

static void double_inits(rp_json *w, const rpt *r, rp_stacks *st)
{
    rp_json_arr(w, "double_inits");
    for (uint32_t i = 0; i < r->ndinits; i++) {
        const rpt_double_init *d = &r->dinits[i];
        rp_json_obj(w, NULL);
        rp_json_str(w, "type", tf_reader_string(r->reader, d->type_name, NULL));
        rp_json_u64(w, "count", d->count);
        rp_json_u64(w, "first_seq", d->first_seq);
        rp_json_u64(w, "object", d->first_obj);
        rpt_json_stacks(w, st, d->py_stack, d->native_stack);
        rp_json_end_obj(w);
    }
    rp_json_end_arr(w);
}

static void gc(rp_json *w, const rpt *r)
{
    rp_json_obj(w, "gc");
    rp_json_arr(w, "generations");
    for (int g = 0; g < 3; g++) {
        rp_json_obj(w, NULL);
        rp_json_i64(w, "generation", g);
        rp_json_u64(w, "collections", r->gc[g].collections);
        rp_json_u64(w, "collected", r->gc[g].collected);
        rp_json_u64(w, "uncollectable", r->gc[g].uncollectable);
        rp_json_u64(w, "pause_ns", r->gc[g].pause_ns);
        rp_json_u64(w, "max_pause_ns", r->gc[g].max_pause_ns);
        rp_json_end_obj(w);
    }
    rp_json_end_arr(w);
    rp_json_u64(w, "freed_in_collections_device_bytes", r->gc_dev_bytes);
    rp_json_u64(w, "freed_in_collections_host_bytes", r->gc_host_bytes);
    /* A chart has no use for more than a few thousand marks: a long run's
     * collections are sampled evenly, the longest pauses are in the totals. */
    uint32_t step = r->ncollections / COLLECTIONS_LISTED + 1;
    rp_json_u64(w, "collections_total", r->ncollections);
    rp_json_arr(w, "collections");
    for (uint32_t i = 0; i < r->ncollections; i += step) {
        const rpt_collection *c = &r->collections[i];
        rp_json_arr(w, NULL);
        rp_json_u64(w, NULL, c->t_start);
        rp_json_u64(w, NULL, c->t_stop);
        rp_json_i64(w, NULL, c->generation);
        rp_json_u64(w, NULL, c->tid);
        rp_json_end_arr(w);
    }
    rp_json_end_arr(w);
    rp_json_end_obj(w);
}

/* What kind of program this was, and what the recorder could not watch. */
static void coverage(rp_json *w, const rpt *r)
{
    rp_json_str(w, "shape", rpt_has_device(r) ? "device" : "python");
    rp_json_bool(w, "host_watched", rpt_host_watched(r));
    rp_json_arr(w, "not_watched");
    for (uint32_t i = 0; rpt_not_watched(r, i); i++)
        rp_json_str(w, NULL, rpt_not_watched(r, i));
    rp_json_end_arr(w);
}

int rpt_print_json(const rpt *r, rp_stacks *st, FILE *out)
{
    rp_json w;
    rp_json_init(&w, out);
    rp_json_obj(&w, NULL);
    rp_json_str(&w, "schema", "trace-replay-report/1");
    log_state(&w, r);
    process(&w, r);
    counts(&w, r);
    memory(&w, r);
    pools(&w, r, st);
    modules(&w, r);
    sites(&w, r, st);
    stack_tallies(&w, st, "device_stacks", r->dev_stacks, r->ndev_stacks);
    stack_tallies(&w, st, "host_stacks", r->host_stacks, r->nhost_stacks);
    coverage(&w, r);
    checks(&w, r, st);
    model_check(&w, r, st);
    double_inits(&w, r, st);
    gc(&w, r);
    rp_json_end_obj(&w);
    return ferror(out) ? -1 : 0;
}
