/* report_text.c - the report for people: a terminal's worth of sections. */
#include "report.h"
#include "verdict.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOP_SITES 10
#define WARNINGS_SHOWN 10

/* Both stacks of an event, Python first (that is what people wrote), runs
 * of interpreter, start-up and tracer frames folded (--full-stacks: all). */
static int full_stacks;

static void print_stacks(rn_stacks *st, FILE *out, uint32_t py, uint32_t native)
{
    const rn_py_frame *pf[RPT_MAX_FRAMES];
    const rn_native_frame *nf[RPT_MAX_FRAMES];
    char line[1024], shown[2048];
    uint32_t n = rn_stacks_py(st, py, pf, RPT_MAX_FRAMES), depth = rn_stacks_py_depth(st, py);
    if (n)
        fprintf(out, "      Python stack (innermost first):\n");
    for (uint32_t i = 0; i < n;) {
        uint32_t run = full_stacks ? 1 : rn_py_run(pf, n, i);
        uint32_t seen = run > RN_PY_RUN_SHOWN ? RN_PY_RUN_SHOWN : run;
        for (uint32_t k = i; k < i + seen; k++) {
            rn_py_frame_text(pf[k], line, sizeof line);
            fprintf(out, "        %s\n", rn_text(shown, sizeof shown, line));
        }
        if (run > seen)
            fprintf(out, "        [the frame above repeated %u more times]\n", run - seen);
        i += run;
    }
    if (depth > n)
        fprintf(out, "        ... %u more frames not shown\n", depth - n);
    n = rn_stacks_native(st, native, nf, RPT_MAX_FRAMES);
    if (n)
        fprintf(out, "      native stack (innermost first):\n");
    for (uint32_t i = 0; i < n;) {
        const char *what = NULL;
        uint32_t k = full_stacks ? 1 : rn_fold_next(nf, n, i, &what);
        if (what) {
            fprintf(out, "        ... %u %s frames\n", k, what);
        } else {
            rn_native_frame_text(nf[i], line, sizeof line);
            fprintf(out, "        %s\n", rn_text(shown, sizeof shown, line));
        }
        i += k;
    }
    depth = rn_stacks_native_depth(st, native);
    if (depth > n)
        fprintf(out, "        ... %u more frames not shown\n", depth - n);
    if (rn_native_walk_cut(nf, n))
        fprintf(out, "        %s\n", RN_NATIVE_CUT_TEXT);
}

static void print_header(const rpt *r, FILE *out)
{
    const tf_header *h = tf_reader_header(r->reader);
    char when[64] = "start time unknown", cuda[512];
    rpt_cuda_text(r, cuda, sizeof cuda);
    time_t wall = (time_t)(h->wall_start_ns / 1000000000ULL);
    struct tm tm;
    if (h->wall_start_ns && gmtime_r(&wall, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    char a[1024], b[1024], c[256];
    fprintf(out, "trace-replay report: %s\n", rn_text(a, sizeof a, r->path));
    fprintf(out, "  command    %s\n", h->cmdline && *h->cmdline ? rn_text(a, sizeof a, h->cmdline) : "(unknown)");
    fprintf(out, "  process    pid %u (parent %u) on %s\n", h->pid, h->ppid,
            h->hostname && *h->hostname ? rn_text(a, sizeof a, h->hostname) : "?");
    fprintf(out, "  runtime    Python %s, %s, tracer %s\n", rn_text(a, sizeof a, rpt_python_version(r)),
            rn_text(b, sizeof b, cuda), rn_text(c, sizeof c, h->tracer_version));
    fprintf(out, "  recorded   %s, %.3f s, %" PRIu64 " events, %u threads\n", when, rpt_seconds(r, r->t_last),
            r->events, r->nthreads);
    if (r->run > 1)
        fprintf(out, "  log        log %d of this file (logs joined with cat)\n", r->run);
    if (r->status->next_run_offset)
        fprintf(out, "  log        another log follows in this file at byte %" PRIu64 " (logs joined with cat): "
                     "--run %d reports on it\n", r->status->next_run_offset, r->run + 1);
    if (r->damage)
        fprintf(out, "  log        damaged: %s\n", r->damage);
    else if (!r->status->clean_end)
        fprintf(out, "  log        no end record: the process did not exit normally\n");
    fprintf(out, "  settings   %s\n", h->settings && *h->settings ? rn_text(a, sizeof a, h->settings) : "(defaults)");
    for (uint32_t i = 0; i < tf_reader_info_count(r->reader); i++) {
        const char *key, *value;
        if (tf_reader_info(r->reader, i, &key, &value))
            fprintf(out, "  info       %s: %s\n", rn_text(c, sizeof c, key), rn_text(a, sizeof a, value));
    }
}

/* One line per kind of finding, first: what trace-run shows of a report
 * (and, per process, the report over several logs). */
void rpt_print_findings(const rpt *r, FILE *out)
{
    char dev[32], host[32];
    if (r->model && r->model->violated && r->model->by_model)
        fprintf(out, "  pool model (%s): VIOLATION [%s] at seq %" PRIu64 " (see Pool models)\n", r->model_name,
                r->model->violation.invariant, r->model->violation.at.seq);
    else if (r->model && r->model->ops)
        fprintf(out, "  pool model (%s): no violation in %" PRIu64 " operations\n", r->model_name, r->model->ops);
    if (r->total_violations)
        fprintf(out, "  model-free checks: %" PRIu64 " violations, the first [%s] at seq %" PRIu64 "\n",
                r->total_violations, r->violations[0].invariant, r->violations[0].at.seq);
    else
        fprintf(out, "  model-free checks: no violations\n");
    const char *unwatched = rp_verdict_pool_unwatched(r->reader);
    if (unwatched)
        fprintf(out, "  not every thread's pool requests were recorded (%s): a pool finding may come from those\n",
                unwatched);
    for (uint32_t i = 0; i < r->npools; i++)
        if (r->pools[i].reentries)
            fprintf(out, "  pool %u re-entered %" PRIu64 " times by collections inside its operations\n",
                    r->pools[i].id, r->pools[i].reentries);
    rn_bytes(r->gc_dev_bytes, dev, sizeof dev);
    rn_bytes(r->gc_host_bytes, host, sizeof host);
    if (r->gc_dev_bytes && rpt_has_device(r))
        fprintf(out, "  freed only by garbage collections: device %s, host buffers %s (reference cycles)\n", dev,
                host);
    else if (r->gc_host_bytes)
        fprintf(out, "  freed only by garbage collections: host buffers %s (reference cycles; see Garbage "
                     "collection)\n", host);
    uint64_t dinits = 0;
    for (uint32_t i = 0; i < r->ndinits; i++)
        dinits += r->dinits[i].count;
    if (dinits) {
        uint32_t types = rpt_double_init_types(r);
        fprintf(out, "  double initialisations: %" PRIu64 " objects of %u type%s, from %u place%s\n", dinits,
                types, types == 1 ? "" : "s", r->ndinits, r->ndinits == 1 ? "" : "s");
    }
    uint64_t collections = 0, pause = 0, longest = 0;
    for (int g = 0; g < 3; g++) {
        collections += r->gc[g].collections;
        pause += r->gc[g].pause_ns;
        longest = r->gc[g].max_pause_ns > longest ? r->gc[g].max_pause_ns : longest;
    }
    if (collections)
        fprintf(out, "  garbage collection: %" PRIu64 " collections, %.3f ms paused in all, the longest %.3f ms\n",
                collections, (double)pause / 1e6, (double)longest / 1e6);
    const rpt_collection *open;
    for (uint32_t i = 0; (open = rpt_open_collection(r, i)); i++)
        fprintf(out, "  the log ends inside a collection: generation %d on thread %u, from event %" PRIu64
                     " (the process ended while it ran)\n", open->generation, open->tid, open->seq);
    for (uint32_t i = 0; rpt_not_watched(r, i); i++)
        fprintf(out, "  not watched: %s\n", rpt_not_watched(r, i));
}

static void print_findings(const rpt *r, FILE *out)
{
    fprintf(out, "\nFindings\n");
    rpt_print_findings(r, out);
}

/* Host-buffer figures, or why there are none. */
static void host_bytes(const rpt *r, uint64_t n, char *buf, size_t len)
{
    if (rpt_host_watched(r))
        rn_bytes(n, buf, len);
    else
        snprintf(buf, len, "not watched");
}

static void print_counts(const rpt *r, FILE *out)
{
    fprintf(out, "\nEvents\n");
    for (uint32_t k = 32; k < TF_KIND_MAX; k++)
        if (r->kinds[k])
            fprintf(out, "  %-16s %12" PRIu64 "\n", tf_kind_name(k) ? tf_kind_name(k) : "?", r->kinds[k]);
    fprintf(out, "\nThreads\n");
    for (uint32_t i = 0; i < r->nthreads; i++) {
        const char *name = tf_reader_thread_name(r->reader, r->threads[i].tid);
        const char *py_name = tf_reader_thread_py_name(r->reader, r->threads[i].tid);
        char shown[128], os[128];
        fprintf(out, "  %-8u %-20s %12" PRIu64 " events%s%s\n", r->threads[i].tid,
                *py_name ? rn_text(shown, sizeof shown, py_name) : name && *name ? rn_text(shown, sizeof shown, name) : "-",
                r->threads[i].events, *py_name && name && *name ? "   OS name " : "",
                *py_name && name ? rn_text(os, sizeof os, name) : "");
    }
}

static void print_peak(const rpt *r, FILE *out, const char *what, const rpt_peak *p, int host)
{
    char b[32];
    if (host)
        host_bytes(r, p->bytes, b, sizeof b);
    else
        rn_bytes(p->bytes, b, sizeof b);
    if (p->bytes)
        fprintf(out, "  %-22s %10s at %.3f s (seq %" PRIu64 ")\n", what, b, rpt_seconds(r, p->t_ns), p->seq);
    else
        fprintf(out, "  %-22s %10s\n", what, b);
}

/* Peaks read from a log with events missing (segments deleted to keep it
 * within TRACE_MAX_BYTES, or lost to damage) count only what the rest
 * shows: blocks from before a gap whose frees went with it, segments a pool
 * obtained there and still uses.  Said, as allocated can then read above
 * reserved (session 40's long-run sweep: 7.7 against 6.4 MiB). */
static void print_partial_peaks(const rpt *r, FILE *out)
{
    if (r->events_deleted || r->events_missing)
        fprintf(out, "  (peaks of the kept events only: what the %s events allocated or freed is not counted,\n"
                     "  so these are partial, and allocated can read above reserved)\n",
                r->events_deleted && r->events_missing ? "deleted and lost" : r->events_deleted ? "deleted" : "lost");
}

static void print_pools(const rpt *r, rn_stacks *st, FILE *out)
{
    char res[32], alloc[32];
    if (!r->npools)
        return;
    fprintf(out, "\nMemory pools\n");
    for (uint32_t i = 0; i < r->npools; i++) {
        const rpt_pool *p = &r->pools[i];
        const char *name = tf_reader_pool_name(r->reader, p->id);
        char shown[256];
        rn_bytes(p->peak_reserved, res, sizeof res);
        rn_bytes(p->peak_allocated, alloc, sizeof alloc);
        fprintf(out, "  pool %u (%s): %" PRIu64 " operations, %" PRIu64 " allocations, %" PRIu64 " frees, %" PRIu64
                     " segments obtained; peak reserved %s, allocated %s\n",
                p->id, name ? rn_text(shown, sizeof shown, name) : "unnamed", p->ops, p->allocs, p->frees, p->segments,
                res, alloc);
        if (!p->reentries)
            continue;
        fprintf(out, "    RE-ENTERED %" PRIu64 " times: a collection inside one of its operations ran finalizers\n"
                     "    that called the pool again (first: seq %" PRIu64 " inside the operation at seq %" PRIu64 ").\n"
                     "    Replay its model to see whether that breaks it: trace-replay check %s\n",
                p->reentries, p->first_reentry.seq, p->reentered_op, r->path);
        print_stacks(st, out, p->first_reentry.py_stack, p->first_reentry.native_stack);
    }
}

static void print_site_row(const rpt *r, rn_stacks *st, FILE *out, const rpt_site *s, uint64_t bytes,
                           uint64_t count)
{
    char b[32], py[512], nat[512], shown[1024];
    rn_bytes(bytes, b, sizeof b);
    rpt_site_python(r, s, py, sizeof py);
    rpt_site_native(st, s, nat, sizeof nat);
    fprintf(out, "  %10s %8" PRIu64 "  %s\n", b, count, rn_text(shown, sizeof shown, py));
    fprintf(out, "  %10s %8s    native: %s\n", "", "", rn_text(shown, sizeof shown, nat));
}

static void print_sites(const rpt *r, rn_stacks *st, FILE *out, int which, const char *title)
{
    uint32_t n, *idx = rpt_sites_by(r, which, &n);
    fprintf(out, "\n%s\n", title);
    if (!n)
        fprintf(out, "  none recorded\n");
    else
        fprintf(out, "  %10s %8s  site\n", "bytes", "count");
    for (uint32_t i = 0; i < n && i < TOP_SITES; i++) {
        const rpt_site *s = &r->sites[idx[i]];
        uint64_t count, bytes = rpt_site_figure(s, which, &count);
        print_site_row(r, st, out, s, bytes, count);
    }
    if (n > TOP_SITES)
        fprintf(out, "  ... and %u more sites\n", n - TOP_SITES);
    free(idx);
}

static void print_finding(rn_stacks *st, FILE *out, const rp_finding *f)
{
    fprintf(out, "  [%s] %s\n", f->invariant, f->message);
    if (f->at.seq) {
        fprintf(out, "    at seq %" PRIu64 "\n", f->at.seq);
        print_stacks(st, out, f->at.py_stack, f->at.native_stack);
    }
    if (f->other.seq) {
        fprintf(out, "    conflicts with seq %" PRIu64 "\n", f->other.seq);
        print_stacks(st, out, f->other.py_stack, f->other.native_stack);
    }
}

static void print_checks(const rpt *r, rn_stacks *st, FILE *out)
{
    fprintf(out, "\nChecks (model-free: overlaps, double frees, unknown frees, segments)\n");
    if (!r->total_violations)
        fprintf(out, "  no violations\n");
    for (uint32_t i = 0; i < r->nviolations; i++)
        print_finding(st, out, &r->violations[i]);
    if (r->total_violations > r->nviolations)
        fprintf(out, "  ... and %" PRIu64 " more violations\n", r->total_violations - r->nviolations);
    if (r->total_warnings)
        fprintf(out, "  %" PRIu64 " warnings:\n", r->total_warnings);
    for (uint32_t i = 0; i < r->nwarnings && i < WARNINGS_SHOWN; i++)
        fprintf(out, "    [%s] %s\n", r->warnings[i].invariant, r->warnings[i].message);
    if (r->total_warnings > WARNINGS_SHOWN && r->nwarnings > WARNINGS_SHOWN)
        fprintf(out, "    ... and %" PRIu64 " more warnings\n", r->total_warnings - WARNINGS_SHOWN);
}

static const char *op_text(const rp_opref *o)
{
    return o->op == TF_POOL_OP_ALLOC ? "alloc" : o->op == TF_POOL_OP_FREE ? "free" : "operation";
}

static void print_models(const rpt *r, rn_stacks *st, FILE *out)
{
    const rp_result *m = r->model;
    if (!m)
        return;
    fprintf(out, "\nPool models (replayed as trace-replay check does, model %s)\n", r->model_name);
    if (m->violated) {
        int unwatched = rp_verdict_unwatched_finding(rp_verdict_pool_unwatched(r->reader), m->by_model,
                                                     &m->violation);
        fprintf(out, "  %s [%s] at seq %" PRIu64 ": %s\n",
                unwatched ? "FINDING (perhaps not the pool's: see the verdict)" : "VIOLATION",
                m->violation.invariant, m->violation.at.seq, m->violation.message);
        if (m->op.seq)
            fprintf(out, "    during the %s at seq %" PRIu64 " on pool %u\n", op_text(&m->op), m->op.seq, m->op.pool);
        print_stacks(st, out, m->violation.at.py_stack, m->violation.at.native_stack);
        fprintf(out, "    details, and a smaller log that still breaks it: trace-replay check %s; trace-replay"
                     " minimize %s -o small.tlog\n", r->path, r->path);
    } else if (!m->ops) {
        fprintf(out, "  no pool in this log has a model by its name (choose one with --model)\n");
        return;
    } else {
        fprintf(out, "  no violation\n");
    }
    fprintf(out, "  %" PRIu64 " operations replayed; fidelity: %" PRIu64 " matched, %" PRIu64 " diverged\n", m->ops,
            m->matched, m->diverged);
    char note[512];
    for (uint32_t i = 0; i < m->nnotes; i++)
        fprintf(out, "  model note: %s\n", rn_text(note, sizeof note, m->notes[i].text));
    if (m->notes_dropped)
        fprintf(out, "  model note: %u more not shown\n", m->notes_dropped);
    if (m->ambiguous)
        fprintf(out, "  ambiguous: %" PRIu64 " collection(s) that no stack places (the first at seq %" PRIu64
                     ") break the pool started in one place and not in another; not a violation\n", m->ambiguous,
                m->first_ambiguous_seq);
}

/* The violation the verdict names, with both stacks (rpt_verdict's choice:
 * a pool model's, else the first of the model-free checks). */
void rpt_print_verdict_violation(const rpt *r, rn_stacks *st, FILE *out)
{
    const rp_result *m = r->model;
    full_stacks = r->full_stacks;
    if (m && m->violated && m->by_model) {
        fprintf(out, "  [%s] %s (pool model %s)\n", m->violation.invariant, m->violation.message, r->model_name);
        fprintf(out, "    at seq %" PRIu64 "\n", m->violation.at.seq);
        if (m->op.seq)
            fprintf(out, "    during the %s at seq %" PRIu64 " on pool %u\n", op_text(&m->op), m->op.seq, m->op.pool);
        print_stacks(st, out, m->violation.at.py_stack, m->violation.at.native_stack);
    } else if (r->total_violations) {
        print_finding(st, out, &r->violations[0]);
    }
}

/* Each type's places with most objects, the rest in a line: one bug in an
 * extension reached from many Python lines is one type with hundreds of
 * places. */
#define DINIT_PLACES_SHOWN 5

static void print_double_inits(const rpt *r, rn_stacks *st, FILE *out)
{
    fprintf(out, "\nDouble initialisations (an object initialised twice: the reference total drifts)\n");
    if (!r->ndinits && rpt_double_init_off(r))
        fprintf(out, "  not watched: %s\n", rpt_double_init_off(r));
    else if (!r->ndinits)
        fprintf(out, "  none\n");
    const rpt_double_init **order;
    uint32_t ntypes;
    rpt_dinit_type *types = rpt_double_inits_by_type(r, &order, &ntypes);
    for (uint32_t t = 0; t < ntypes; t++) {
        char shown[256];
        const char *type = rn_text(shown, sizeof shown, tf_reader_string(r->reader, types[t].type_name, NULL));
        uint64_t objects = 0;
        for (uint32_t i = 0; i < types[t].places; i++) {
            const rpt_double_init *d = order[types[t].first + i];
            if (i < DINIT_PLACES_SHOWN) {
                fprintf(out, "  %" PRIu64 " x %s, first at seq %" PRIu64 " (object 0x%" PRIx64 ")\n", d->count,
                        type, d->first_seq, d->first_obj);
                print_stacks(st, out, d->py_stack, d->native_stack);
            } else {
                objects += d->count;
            }
        }
        if (types[t].places > DINIT_PLACES_SHOWN)
            fprintf(out, "  ... %" PRIu64 " more of %s from %u more places (report --json lists up to %d of each "
                         "type)\n", objects, type, types[t].places - DINIT_PLACES_SHOWN, RPT_DINIT_PLACES_LISTED);
    }
    free(order);
    free(types);
}

/* With every object allocation recorded (TRACE_PY_ALLOCS=1): which sites
 * allocated what the collector freed. */
static void print_gc_objects(const rpt *r, rn_stacks *st, FILE *out)
{
    if (!r->kinds[TF_EV_PY_ALLOC] && !r->kinds[TF_EV_PY_FREE])
        return;
    char b[32];
    rn_bytes(r->gc_obj_bytes, b, sizeof b);
    fprintf(out, "\n  Objects collected by the GC, by allocation site: %" PRIu64 " objects, %s\n", r->gc_obj_count, b);
    if (!r->kinds[TF_EV_PY_FREE]) {
        /* With every allocation recorded, frees in collections are too: no
         * collection freed one of them. */
        if (rpt_setting_number(r, "py_allocs") == 1)
            fprintf(out, "  none: no collection freed an object\n");
        else
            fprintf(out, "  none recorded (frees inside collections are recorded with TRACE_PY_ALLOCS=1)\n");
        return;
    }
    fprintf(out, "  What collections freed: objects in reference cycles and what only they kept alive.\n");
    fprintf(out, "  A list, tuple, dict or float a free list handed out is charged to the allocation last\n"
                 "  recorded at its address, which may be another line's (docs/python.md, py_free).\n");
    if (r->gc_obj_unknown)
        fprintf(out, "  %" PRIu64 " more were allocated %s (no site).\n", r->gc_obj_unknown,
                r->events_deleted && r->events_missing
                    ? "in segments deleted to keep the log within its budget or in events the damaged log lost, "
                      "or before recording started"
                : r->events_deleted ? "in segments deleted to keep the log within its budget, or before recording "
                                      "started"
                : r->events_missing ? "in events the damaged log lost, or before the log's allocations"
                : r->after_fork ? "before the fork, in the parent (its log has their allocations)"
                                : "before the log's allocations");
    print_sites(r, st, out, 'o', "  Sites (objects freed by collections, most first)");
}

static void print_gc(const rpt *r, rn_stacks *st, FILE *out)
{
    fprintf(out, "\nGarbage collection\n");
    fprintf(out, "  %-4s %12s %12s %14s %12s %12s\n", "gen", "collections", "collected", "uncollectable",
            "pause total", "max pause");
    for (int g = 0; g < 3; g++) {
        const rpt_gc_gen *s = &r->gc[g];
        fprintf(out, "  %-4d %12" PRIu64 " %12" PRIu64 " %14" PRIu64 " %10.3f ms %9.3f ms\n", g, s->collections,
                s->collected, s->uncollectable, (double)s->pause_ns / 1e6, (double)s->max_pause_ns / 1e6);
    }
    char dev[32], host[32];
    rn_bytes(r->gc_dev_bytes, dev, sizeof dev);
    host_bytes(r, r->gc_host_bytes, host, sizeof host);
    if (rpt_has_device(r))
        fprintf(out, "\n  Memory freed only inside collections: device %s, host buffers %s\n", dev, host);
    else
        fprintf(out, "\n  Memory freed only inside collections: host buffers %s\n", host);
    if (r->gc_dev_bytes || r->gc_host_bytes) {
        fprintf(out, "  Kept alive by reference cycles until a collection; the collector does not count these\n"
                     "  bytes, so it may run too late (%s). Allocated at:\n",
                rpt_has_device(r) ? "MemoryError, out of device memory" : "MemoryError");
        print_sites(r, st, out, 'g', "  Sites (bytes freed by collections)");
    }
    print_gc_objects(r, st, out);
}

static void print_not_watched(const rpt *r, FILE *out)
{
    if (!rpt_not_watched(r, 0))
        return;
    fprintf(out, "\nNot watched (the figures above leave these out)\n");
    for (uint32_t i = 0; rpt_not_watched(r, i); i++)
    {
        fputs("  ", out);
        rn_fputs(rpt_not_watched(r, i), out);
        fputc('\n', out);
    }
}

/* A program that used the GPU: memory over time, pools and device sites
 * first, as the pool bugs need them. */
static void print_device_shaped(const rpt *r, rn_stacks *st, FILE *out)
{
    print_counts(r, out);
    fprintf(out, "\nMemory over time\n");
    print_peak(r, out, "peak device reserved", &r->peak_reserved, 0);
    print_peak(r, out, "peak device allocated", &r->peak_allocated, 0);
    print_peak(r, out, "peak host buffers", &r->peak_host, 1);
    print_partial_peaks(r, out);
    print_pools(r, st, out);
    print_sites(r, st, out, 'd', "Top device allocation sites (bytes allocated over the run)");
    print_sites(r, st, out, 'h', "Top host-buffer allocation sites (bytes allocated over the run)");
    print_checks(r, st, out);
    print_models(r, st, out);
    print_double_inits(r, st, out);
    print_gc(r, st, out);
    print_not_watched(r, out);
}

/* A Python program without a GPU: what Python users hunt first (memory
 * only collections gave back, double initialisations, pauses), then host
 * memory; no device or pool sections, which would only say "0 B". */
static void print_python_shaped(const rpt *r, rn_stacks *st, FILE *out)
{
    print_gc(r, st, out);
    print_double_inits(r, st, out);
    fprintf(out, "\nMemory over time\n");
    print_peak(r, out, "peak host buffers", &r->peak_host, 1);
    print_partial_peaks(r, out);
    print_sites(r, st, out, 'h', "Top host-buffer allocation sites (bytes allocated over the run)");
    print_checks(r, st, out);
    print_not_watched(r, out);
    print_counts(r, out);
}

/* Frames shown as module+offset because the file at hand is another build
 * of their module: said once per module, with what to do. */
static void print_unresolved(const rpt *r, rn_stacks *st, FILE *out)
{
    int said = 0;
    for (uint32_t i = 0; i < r->nmodules_on_stacks; i++) {
        const tf_module *m = tf_reader_module(r->reader, r->modules_on_stacks[i]);
        const char *other = m ? rn_stacks_module_differs(st, m) : NULL;
        if (!other)
            continue;
        if (!said++)
            fprintf(out, "\nSymbols\n");
        char a[512], b[512];
        fprintf(out, "  %s: not resolved: %s is another build (its %s differs from the recorded one)\n",
                rn_text(a, sizeof a, m->path ? m->path : "?"), rn_text(b, sizeof b, other),
                m->build_id_len ? "build-id" : "load segments");
    }
    if (said)
        fprintf(out, "  its frames show module+offset; give --debug-dir DIR with the recorded files "
                     "(scripts/trace-bundle packs them on the machine of the run)\n");
}

int rpt_print_text(const rpt *r, rn_stacks *st, FILE *out)
{
    full_stacks = r->full_stacks;
    print_header(r, out);
    print_findings(r, out);
    if (rpt_has_device(r))
        print_device_shaped(r, st, out);
    else
        print_python_shaped(r, st, out);
    print_unresolved(r, st, out);
    rp_verdict v;
    rpt_verdict(r, &v);
    fprintf(out, "\nverdict: %s\n", v.text);
    return ferror(out) ? -1 : 0;
}
