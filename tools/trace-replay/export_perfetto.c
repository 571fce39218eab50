/*
 * export_perfetto.c - `trace-replay export --perfetto OUT LOG`: the log as
 * Chrome trace-event JSON, which the Perfetto UI (ui.perfetto.dev) and
 * chrome://tracing open.
 *
 * Collections and pool operations become slices (B/E pairs on their thread,
 * so they nest the way they ran: a pool free inside a collection inside a
 * pool alloc); allocations, frees, segments, double initialisations and marks
 * become instant events with their stacks in args; memory becomes counters
 * (the report's figures, from the same pass).  Timestamps are microseconds
 * since the process started, with nanosecond fractions.
 */
#include "commands.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "report.h"

#define MAX_DEBUG_DIRS 16

typedef struct exporter {
    rn_json j;
    rn_stacks *stacks;
    const tf_reader *reader;
    uint64_t t0, t_last;
    uint32_t pid;
    uint64_t shown[RPT_SERIES_MEASURES];  /* counter values last written */
    int counters_written;
    int no_stacks;                        /* --no-stacks: smaller files for long logs */
    uint64_t first, last;                 /* --range: the events written */
    const rpt *r;                         /* the report's figures, from the same pass */
} exporter;

static const char usage[] =
    "usage: trace-replay export --perfetto OUT LOG [--debug-dir DIR] [--no-stacks] [--range FIRST:LAST]\n"
    "  Write the log as Chrome trace-event JSON for the Perfetto UI or\n"
    "  chrome://tracing: memory counters, collections and pool operations as\n"
    "  nested slices, allocations as instant events with their stacks.\n"
    "  --no-stacks  leave the stacks out (a file several times smaller)\n"
    "  --range FIRST:LAST  only the events with seq in [FIRST, LAST] (long logs:\n"
    "               the UI takes a few million events; see trace-replay check\n"
    "               for the seq of a violation)\n";

/* Microseconds with the nanoseconds as a fraction: sub-microsecond order
 * matters inside a collection. */
static void timestamp(exporter *x, uint64_t t_ns)
{
    uint64_t t = t_ns > x->t0 ? t_ns - x->t0 : 0;
    rn_json_fixed3(&x->j, "ts", t / 1000, (unsigned)(t % 1000));
}

static void hex(rn_json *j, const char *key, uint64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "0x%" PRIx64, v);
    rn_json_str(j, key, buf);
}

/* Opens an event object; the caller adds fields and closes it. */
static void begin_event(exporter *x, const char *ph, const char *name, const char *cat, uint32_t tid, uint64_t t_ns)
{
    rn_json_obj(&x->j, NULL);
    rn_json_str(&x->j, "ph", ph);
    rn_json_str(&x->j, "name", name);
    if (cat)
        rn_json_str(&x->j, "cat", cat);
    rn_json_u64(&x->j, "pid", x->pid);
    rn_json_u64(&x->j, "tid", tid);
    timestamp(x, t_ns);
}

static void stacks(exporter *x, const tf_event *e)
{
    if (!x->no_stacks)
        rn_json_stacks(&x->j, x->stacks, e->native_stack, e->py_stack);
}

static const char *pool_name(exporter *x, uint32_t pool)
{
    const char *name = tf_reader_pool_name(x->reader, pool);
    return name ? name : "pool";
}

/* Name and address/size of an instant event; 0 for kinds not shown. */
static int describe(exporter *x, const tf_event *e, char *name, size_t len, uint64_t *ptr, uint64_t *size)
{
    char b[32];
    switch (e->kind) {
    case TF_EV_CUDA_ALLOC:
    case TF_EV_CUDA_FREE:
        *ptr = e->u.cuda.ptr;
        *size = e->u.cuda.size;
        rn_bytes(*size, b, sizeof b);
        snprintf(name, len, "%s %s%s", tf_api_name(e->u.cuda.api), e->kind == TF_EV_CUDA_ALLOC ? b : "",
                 e->u.cuda.result ? " (failed)" : "");
        return 1;
    case TF_EV_POOL_ALLOC:
    case TF_EV_POOL_FREE:
        *ptr = e->u.pool.ptr;
        *size = e->kind == TF_EV_POOL_ALLOC ? e->u.pool.granted : e->u.pool.requested;
        rn_bytes(*size, b, sizeof b);
        snprintf(name, len, "%s %s %s", pool_name(x, e->u.pool.pool), e->kind == TF_EV_POOL_ALLOC ? "alloc" : "free",
                 b);
        return 1;
    case TF_EV_POOL_SEGMENT:
        *ptr = e->u.segment.ptr;
        *size = e->u.segment.size;
        rn_bytes(*size, b, sizeof b);
        snprintf(name, len, "%s segment %s %s", pool_name(x, e->u.segment.pool),
                 e->u.segment.grow ? "grow" : "release", b);
        return 1;
    case TF_EV_HOST_ALLOC:
    case TF_EV_HOST_FREE:
    case TF_EV_PY_ALLOC:
        *ptr = e->u.host.ptr;
        *size = e->u.host.size;
        rn_bytes(*size, b, sizeof b);
        snprintf(name, len, "%s %s", tf_kind_name(e->kind), b);
        return 1;
    case TF_EV_PY_DOUBLE_INIT: {
        const char *type = tf_reader_string(x->reader, e->u.double_init.type_name, NULL);
        *ptr = e->u.double_init.obj;
        *size = 0;
        snprintf(name, len, "double init %s", type ? type : "?");
        return 1;
    }
    case TF_EV_MARK: {
        const char *text = tf_reader_string(x->reader, e->u.mark.text, NULL);
        *ptr = *size = 0;
        snprintf(name, len, "mark: %s", text ? text : "");
        return 1;
    }
    default:
        return 0;
    }
}

static void instant(exporter *x, const tf_event *e)
{
    char name[256];
    uint64_t ptr, size;
    if (!describe(x, e, name, sizeof name, &ptr, &size))
        return;
    begin_event(x, "i", name, tf_kind_name(e->kind), e->tid, e->t_ns);
    rn_json_str(&x->j, "s", "t");
    rn_json_obj(&x->j, "args");
    rn_json_u64(&x->j, "seq", e->seq);
    if (ptr)
        hex(&x->j, "ptr", ptr);
    if (size)
        rn_json_u64(&x->j, "size", size);
    stacks(x, e);
    rn_json_end_obj(&x->j);
    rn_json_end_obj(&x->j);
}

static void slice_begin(exporter *x, const tf_event *e)
{
    char name[128], b[32];
    if (e->kind == TF_EV_GC_START) {
        snprintf(name, sizeof name, "gc generation %d", e->u.gc.generation);
        begin_event(x, "B", name, "gc", e->tid, e->t_ns);
    } else {
        const char *op = e->u.pool_op.op == TF_POOL_OP_ALLOC ? "alloc" : e->u.pool_op.op == TF_POOL_OP_FREE ? "free"
                                                                                                           : "op";
        rn_bytes(e->u.pool_op.arg, b, sizeof b);
        if (e->u.pool_op.op == TF_POOL_OP_ALLOC)
            snprintf(name, sizeof name, "%s %s %s", pool_name(x, e->u.pool_op.pool), op, b);
        else
            snprintf(name, sizeof name, "%s %s 0x%" PRIx64, pool_name(x, e->u.pool_op.pool), op, e->u.pool_op.arg);
        begin_event(x, "B", name, "pool", e->tid, e->t_ns);
    }
    rn_json_obj(&x->j, "args");
    rn_json_u64(&x->j, "seq", e->seq);
    stacks(x, e);
    rn_json_end_obj(&x->j);
    rn_json_end_obj(&x->j);
}

static void counters(exporter *x, const rpt *r, const tf_event *e)
{
    uint64_t v[RPT_SERIES_MEASURES];
    rpt_memory_now(r, v);
    if (x->counters_written && !memcmp(v, x->shown, sizeof v))
        return;
    x->counters_written = 1;
    memcpy(x->shown, v, sizeof v);
    begin_event(x, "C", "device memory", NULL, e->tid, e->t_ns);
    rn_json_obj(&x->j, "args");
    rn_json_u64(&x->j, "reserved", v[0]);
    rn_json_u64(&x->j, "allocated", v[1]);
    rn_json_end_obj(&x->j);
    rn_json_end_obj(&x->j);
    begin_event(x, "C", "large host buffers", NULL, e->tid, e->t_ns);
    rn_json_obj(&x->j, "args");
    rn_json_u64(&x->j, "bytes", v[2]);
    rn_json_end_obj(&x->j);
    rn_json_end_obj(&x->j);
}

static int on_event(void *ctx, const tf_event *e, const rp_where *w)
{
    exporter *x = ctx;
    const rpt *r = x->r;
    (void)w;
    x->t_last = e->t_ns;
    if (e->seq < x->first || e->seq > x->last)
        return 0;
    if (e->kind == TF_EV_GC_START || e->kind == TF_EV_POOL_OP_BEGIN)
        slice_begin(x, e);
    else
        instant(x, e);
    if (e->kind >= TF_EV_CUDA_ALLOC && e->kind <= TF_EV_POOL_SEGMENT)
        counters(x, r, e);
    else if (e->kind == TF_EV_HOST_ALLOC || e->kind == TF_EV_HOST_FREE)
        counters(x, r, e);
    return 0;
}

/* The end of a slice: at its end event, or where the log shows it was left. */
static void on_closed(void *ctx, const rp_frame *f, rp_close how, const tf_event *by)
{
    exporter *x = ctx;
    (void)how;
    if (f->seq < x->first || f->seq > x->last)
        return;   /* its beginning was not written */
    rn_json_obj(&x->j, NULL);
    rn_json_str(&x->j, "ph", "E");
    rn_json_u64(&x->j, "pid", x->pid);
    rn_json_u64(&x->j, "tid", f->tid);
    timestamp(x, by ? by->t_ns : x->t_last);
    rn_json_obj(&x->j, "args");
    if (by && by->kind == TF_EV_GC_STOP && f->kind == TF_EV_GC_START) {
        rn_json_u64(&x->j, "collected", by->u.gc.collected);
        rn_json_u64(&x->j, "uncollectable", by->u.gc.uncollectable);
    } else if (!by || (by->kind != TF_EV_POOL_OP_END && by->kind != TF_EV_GC_STOP)) {
        rn_json_str(&x->j, "ended", by ? "left without its end event (raised)" : "open at the end of the log");
    }
    rn_json_end_obj(&x->j);
    rn_json_end_obj(&x->j);
}

static void metadata(exporter *x, const char *what, uint32_t tid, const char *name)
{
    rn_json_obj(&x->j, NULL);
    rn_json_str(&x->j, "ph", "M");
    rn_json_str(&x->j, "name", what);
    rn_json_u64(&x->j, "pid", x->pid);
    rn_json_u64(&x->j, "tid", tid);
    rn_json_obj(&x->j, "args");
    rn_json_str(&x->j, "name", name);
    rn_json_end_obj(&x->j);
    rn_json_end_obj(&x->j);
}

static void names(exporter *x, const rpt *r)
{
    const tf_header *h = tf_reader_header(r->reader);
    metadata(x, "process_name", h->pid, h->cmdline && *h->cmdline ? h->cmdline : "traced process");
    for (uint32_t i = 0; i < r->nthreads; i++) {
        const char *name = tf_reader_thread_name(r->reader, r->threads[i].tid);
        const char *py_name = tf_reader_thread_py_name(r->reader, r->threads[i].tid);
        metadata(x, "thread_name", r->threads[i].tid, *py_name ? py_name : name && *name ? name : "thread");
    }
}

typedef struct export_options {
    const char *const *dirs;
    int ndirs, no_stacks;
    uint64_t first, last;
} export_options;

static int export_log(const char *log, const char *out_path, const export_options *o)
{
    char err[512];
    rpt r;
    rpt_options ro = {.debug_dirs = o->dirs, .ndebug_dirs = o->ndirs, .progress = "trace-replay export"};
    if (rpt_open(&r, log, &ro, err, sizeof err)) {
        fprintf(stderr, "trace-replay export: %s: %s\n", log, err);
        rpt_free(&r);
        return 2;
    }
    FILE *out = fopen(out_path, "w");
    if (!out) {
        fprintf(stderr, "trace-replay export: %s: %s\n", out_path, strerror(errno));
        rpt_free(&r);
        return 2;
    }
    const tf_header *h = tf_reader_header(r.reader);
    exporter x;
    memset(&x, 0, sizeof x);
    x.reader = r.reader;
    x.pid = h->pid;
    x.t0 = h->mono_start_ns;
    x.stacks = r.stacks;
    x.no_stacks = o->no_stacks;
    x.first = o->first;
    x.last = o->last;
    rn_json_init(&x.j, out);
    rn_json_obj(&x.j, NULL);
    rn_json_str(&x.j, "displayTimeUnit", "ms");
    rn_json_arr(&x.j, "traceEvents");
    x.r = &r;
    rp_subscriber follow = {&x, on_event, on_closed};
    rpt_read(&r, &follow);
    names(&x, &r);
    rn_json_end_arr(&x.j);
    rn_json_end_obj(&x.j);
    rn_json_close(&x.j);
    rpt_free(&r);
    if (fclose(out)) {
        fprintf(stderr, "trace-replay export: %s: write failed\n", out_path);
        return 2;
    }
    return 0;
}

int cmd_export(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"perfetto", required_argument, NULL, 'p'},
        {"debug-dir", required_argument, NULL, 'd'},
        {"no-stacks", no_argument, NULL, 'n'},
        {"range", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *out = NULL, *dirs[MAX_DEBUG_DIRS];
    export_options o = {dirs, 0, 0, 0, UINT64_MAX};
    char *end;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'p': out = optarg; break;
        case 'd':
            if (o.ndirs < MAX_DEBUG_DIRS)
                dirs[o.ndirs++] = optarg;
            break;
        case 'n': o.no_stacks = 1; break;
        case 'r':
            o.first = strtoull(optarg, &end, 10);
            if (*end != ':' || (o.last = strtoull(end + 1, &end, 10), *end) || o.last < o.first) {
                fprintf(stderr, "trace-replay export: --range wants FIRST:LAST, got '%s'\n", optarg);
                return 2;
            }
            break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (!out || optind != argc - 1) {
        fputs(usage, stderr);
        return 2;
    }
    return export_log(argv[optind], out, &o);
}
