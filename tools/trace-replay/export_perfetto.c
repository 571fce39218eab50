/*
 * export_perfetto.c - `trace-replay export --perfetto OUT LOG`: the log in
 * Perfetto's own trace format (protobuf: a Trace of TracePackets), which
 * ui.perfetto.dev and trace_processor read natively and fast.
 *
 * Collections and pool operations become slices on their thread's track
 * (begin and end, so they nest the way they ran: a pool free inside a
 * collection inside a pool alloc); allocations, frees, segments, double
 * initialisations and marks become instant events; memory becomes three
 * counter tracks (the report's figures, from the same pass).  Every event
 * carries its seq (and address, size) as debug annotations, and its stacks
 * as an interned callstack: Python frames outermost first, then the native
 * ones.  Names, frames and callstacks are interned once (InternedData on the
 * one packet sequence), so a 32-frame stack costs an id per event: tens of
 * bytes per event instead of kilobytes of JSON.
 *
 * Field numbers are those of perfetto/protos/perfetto/trace (trace.proto,
 * trace_packet.proto, the track_event and interned_data protos,
 * profiling/profile_common.proto).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "idmap.h"
#include "ptrmap.h"
#include "report.h"
#include "text.h"
#include "xalloc.h"

#define MAX_DEBUG_DIRS 16
#define MAX_FRAMES 256

/* Wire types. */
enum { WT_VARINT = 0, WT_LEN = 2 };

/* Trace, TracePacket, TrackEvent, ... fields used here. */
enum {
    TRACE_PACKET = 1,
    PKT_TIMESTAMP = 8, PKT_SEQ_ID = 10, PKT_TRACK_EVENT = 11, PKT_INTERNED = 12, PKT_SEQ_FLAGS = 13,
    PKT_TRACK_DESCRIPTOR = 60,
    SEQ_CLEARED = 1, SEQ_NEEDS_STATE = 2,
    TE_DEBUG = 4, TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK = 11, TE_COUNTER = 30, TE_CALLSTACK_IID = 56,
    TYPE_BEGIN = 1, TYPE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4,
    DA_NAME_IID = 1, DA_UINT = 3, DA_POINTER = 7, DA_STRING = 6,
    TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT = 5, TD_COUNTER = 8,
    PD_PID = 1, PD_NAME = 6, THD_PID = 1, THD_TID = 2, THD_NAME = 5, CD_UNIT = 3, UNIT_BYTES = 3,
    ID_EVENT_NAMES = 2, ID_DA_NAMES = 3, ID_FUNCTION_NAMES = 5, ID_FRAMES = 6, ID_CALLSTACKS = 7,
    IID = 1, NAME = 2,                      /* EventName, DebugAnnotationName, InternedString */
    FRAME_FUNCTION = 2, FRAME_KIND = 7, KIND_NATIVE = 1, KIND_INTERPRETED = 3,
    CALLSTACK_FRAMES = 2,
};

/* Debug annotation names, interned in the first packet. */
enum { DA_SEQ = 1, DA_PTR, DA_SIZE, DA_COLLECTED, DA_UNCOLLECTABLE, DA_ENDED, DA_NAMES };
static const char *const da_names[DA_NAMES] = {
    [DA_SEQ] = "seq", [DA_PTR] = "ptr", [DA_SIZE] = "size", [DA_COLLECTED] = "collected",
    [DA_UNCOLLECTABLE] = "uncollectable", [DA_ENDED] = "ended",
};

/* Track uuids, small (every event names its track): the counters, the
 * process, then the threads in order of appearance. */
enum { COUNTER_RESERVED = 1, COUNTER_ALLOCATED, COUNTER_HOST, PROCESS_UUID, THREAD_UUID };

/* A growing byte buffer: a message being written. */
typedef struct pb { uint8_t *b; size_t n, cap; } pb;

static void pb_raw(pb *p, const void *data, size_t n)
{
    rp_grow(&p->b, &p->cap, p->n + n, 1);
    memcpy(p->b + p->n, data, n);
    p->n += n;
}

static void pb_uv(pb *p, uint64_t v)
{
    uint8_t b[10];
    size_t n = 0;
    do {
        b[n++] = (uint8_t)(v & 0x7f) | (v >= 0x80 ? 0x80 : 0);
        v >>= 7;
    } while (v);
    pb_raw(p, b, n);
}

static void pb_key(pb *p, uint32_t field, int wire) { pb_uv(p, (uint64_t)field << 3 | (uint64_t)wire); }
static void pb_varint(pb *p, uint32_t field, uint64_t v) { pb_key(p, field, WT_VARINT); pb_uv(p, v); }

static void pb_bytes(pb *p, uint32_t field, const void *data, size_t n)
{
    pb_key(p, field, WT_LEN);
    pb_uv(p, n);
    pb_raw(p, data, n);
}

/* A string of the log: Perfetto's strings are UTF-8, and the UI shows what
 * the text outputs show, escapes included (render/text.h). */
static void pb_str(pb *p, uint32_t field, const char *s)
{
    size_t n = strlen(s);
    if (!rn_needs_escape(s, n)) {
        pb_bytes(p, field, s, n);
        return;
    }
    char buf[4096];
    rn_text_n(buf, sizeof buf, s, n);
    pb_bytes(p, field, buf, strlen(buf));
}
static void pb_msg(pb *p, uint32_t field, const pb *sub) { pb_bytes(p, field, sub->b, sub->n); }

/* A string -> iid table (event names, function names). */
typedef struct strings {
    tf_idmap index;             /* hash (probed on) -> position */
    char **s;
    size_t n, cap;
} strings;

static uint32_t str_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

/* The iid of s (from 1); *fresh when it was not interned before. */
static uint64_t intern(strings *t, const char *s, int *fresh)
{
    uint32_t pos;
    for (uint32_t h = str_hash(s);; h++) {
        if (!tf_idmap_get(&t->index, h, &pos)) {
            if (tf_idmap_put(&t->index, h, (uint32_t)t->n) < 0) {
                fprintf(stderr, "trace-replay export: out of memory\n");
                exit(2);
            }
            break;
        }
        if (!strcmp(t->s[pos], s)) {
            *fresh = 0;
            return pos + 1;
        }
    }
    rp_grow(&t->s, &t->cap, t->n + 1, sizeof *t->s);
    t->s[t->n] = rp_xstrdup(s);
    *fresh = 1;
    return ++t->n;
}

static void strings_free(strings *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->s[i]);
    free(t->s);
    tf_idmap_free(&t->index);
}

typedef struct exporter {
    FILE *out;
    rn_stacks *stacks;
    const tf_reader *reader;
    const rpt *r;
    uint32_t pid;
    int no_stacks;                        /* --no-stacks: no callstacks */
    uint64_t first, last;                 /* --range: the events written */
    pb packet, event, interned, sub, sub2;
    pb head;                              /* a packet's key and length (emit) */
    int interned_some;                    /* interned has entries for this packet */
    int first_packet;
    strings names, functions;
    rp_ptrmap frames;                     /* function iid << 1 | interpreted -> iid */
    uint64_t nframes;
    rp_ptrmap callstacks;                 /* (native id, py id) -> iid */
    uint64_t ncallstacks;
    rp_ptrmap threads;                    /* tid -> its track's uuid, once described */
    uint64_t nthreads;
    uint64_t t0;                          /* timestamps count from here (the process start) */
    uint64_t shown[RPT_SERIES_MEASURES];  /* counter values last written */
    int counters_written;
    uint64_t t_last;
    uint64_t bytes, packets;              /* written, for the summary */
} exporter;

static const char usage[] =
    "usage: trace-replay export --perfetto OUT LOG [--debug-dir DIR] [--no-stacks] [--range FIRST:LAST] [--run N]\n"
    "  Write the log in Perfetto's trace format (protobuf) for ui.perfetto.dev or\n"
    "  trace_processor: memory counters, collections and pool operations as nested\n"
    "  slices on each thread, allocations as instant events with their stacks\n"
    "  (frames and stacks interned: tens of bytes per event).\n"
    "  --no-stacks  leave the stacks out\n"
    "  --range FIRST:LAST  only the events with seq in [FIRST, LAST] (see trace-replay\n"
    "               check for the seq of a violation)\n"
    "  --run N      the N-th log of a file that holds several (logs joined with cat)\n"
    "exit status: 0 written, 2 usage error, unreadable log or failed write\n";

/* ---------------------------------------------------------------- packets */

/* Interned entries for the packet being built: each goes into interned. */
static void intern_entry(exporter *x, uint32_t field, const pb *entry)
{
    pb_msg(&x->interned, field, entry);
    x->interned_some = 1;
}

static void named_entry(exporter *x, uint32_t field, uint64_t iid, const char *name)
{
    pb e = {0};
    pb_varint(&e, IID, iid);
    pb_str(&e, NAME, name);
    intern_entry(x, field, &e);
    free(e.b);
}

/* Write the packet built so far: its interned data, the sequence and the
 * flags every packet of ours carries. */
static void emit(exporter *x)
{
    pb *p = &x->packet;
    pb_varint(p, PKT_SEQ_ID, 1);
    if (x->interned_some)
        pb_msg(p, PKT_INTERNED, &x->interned);
    pb_varint(p, PKT_SEQ_FLAGS, x->first_packet ? SEQ_CLEARED | SEQ_NEEDS_STATE : SEQ_NEEDS_STATE);
    x->first_packet = 0;
    /* The Trace's field: its key and length, then the packet as built (a
     * buffer made and freed per packet was two mallocs an event). */
    pb *head = &x->head;
    head->n = 0;
    pb_key(head, TRACE_PACKET, WT_LEN);
    pb_uv(head, p->n);
    fwrite(head->b, 1, head->n, x->out);
    fwrite(p->b, 1, p->n, x->out);
    x->bytes += head->n + p->n;
    x->packets++;
    p->n = x->interned.n = 0;
    x->interned_some = 0;
}

static uint64_t name_iid(exporter *x, const char *name)
{
    int fresh;
    uint64_t iid = intern(&x->names, name, &fresh);
    if (fresh)
        named_entry(x, ID_EVENT_NAMES, iid, name);
    return iid;
}

static uint64_t function_iid(exporter *x, const char *text)
{
    int fresh;
    uint64_t iid = intern(&x->functions, text, &fresh);
    if (fresh)
        named_entry(x, ID_FUNCTION_NAMES, iid, text);
    return iid;
}

/* A frame as an interned Frame: one per function text and kind (the text
 * names the function, its module or file, and its line). */
static uint64_t frame_iid(exporter *x, const char *text, int interpreted)
{
    uint64_t fn = function_iid(x, text), key = fn << 1 | (uint64_t)interpreted;
    uint64_t *at = rp_ptrmap_get(&x->frames, key);
    if (at)
        return *at;
    uint64_t iid = ++x->nframes;
    rp_ptrmap_put(&x->frames, key, iid);
    pb f = {0};
    pb_varint(&f, IID, iid);
    pb_varint(&f, FRAME_FUNCTION, fn);
    pb_varint(&f, FRAME_KIND, interpreted ? KIND_INTERPRETED : KIND_NATIVE);
    intern_entry(x, ID_FRAMES, &f);
    free(f.b);
    return iid;
}

/* Both stacks of an event as one interned Callstack, bottom frame first:
 * the Python frames (outermost first), then the native ones. */
static uint64_t callstack_iid(exporter *x, uint32_t native, uint32_t py)
{
    if (x->no_stacks || (!native && !py))
        return 0;
    uint64_t key = (uint64_t)native << 32 | py, *at = rp_ptrmap_get(&x->callstacks, key);
    if (at)
        return *at;
    const rn_native_frame *nf[MAX_FRAMES];
    const rn_py_frame *pf[MAX_FRAMES];
    char text[1024];
    uint32_t nn = rn_stacks_native(x->stacks, native, nf, MAX_FRAMES);
    uint32_t np = rn_stacks_py(x->stacks, py, pf, MAX_FRAMES);
    uint64_t ids[2 * MAX_FRAMES];
    uint32_t n = 0;
    for (uint32_t i = np; i-- > 0;) {
        rn_py_frame_text(pf[i], text, sizeof text);
        ids[n++] = frame_iid(x, text, 1);
    }
    for (uint32_t i = nn; i-- > 0;) {
        rn_native_frame_text(nf[i], text, sizeof text);
        ids[n++] = frame_iid(x, text, 0);
    }
    uint64_t iid = 0;
    if (n) {
        iid = ++x->ncallstacks;
        pb c = {0}, packed = {0};
        pb_varint(&c, IID, iid);
        for (uint32_t i = 0; i < n; i++)
            pb_uv(&packed, ids[i]);
        pb_bytes(&c, CALLSTACK_FRAMES, packed.b, packed.n);
        intern_entry(x, ID_CALLSTACKS, &c);
        free(c.b);
        free(packed.b);
    }
    rp_ptrmap_put(&x->callstacks, key, iid);
    return iid;
}

static uint64_t ts(exporter *x, uint64_t t_ns)
{
    x->t_last = t_ns;
    return t_ns > x->t0 ? t_ns - x->t0 : 0;
}

static void annotation_u64(exporter *x, uint32_t name, uint64_t v, int pointer)
{
    pb *d = &x->sub;
    d->n = 0;
    pb_varint(d, DA_NAME_IID, name);
    pb_varint(d, pointer ? DA_POINTER : DA_UINT, v);
    pb_msg(&x->event, TE_DEBUG, d);
}

static void annotation_str(exporter *x, uint32_t name, const char *v)
{
    pb *d = &x->sub;
    d->n = 0;
    pb_varint(d, DA_NAME_IID, name);
    pb_str(d, DA_STRING, v);
    pb_msg(&x->event, TE_DEBUG, d);
}

/* The thread's track, described the first time it is used. */
static uint64_t thread_track(exporter *x, uint32_t tid)
{
    uint64_t *at = rp_ptrmap_get(&x->threads, tid);
    if (at)
        return *at;
    uint64_t uuid = THREAD_UUID + x->nthreads++;
    rp_ptrmap_put(&x->threads, tid, uuid);
    const char *name = tf_reader_thread_name(x->reader, tid);
    pb *th = &x->sub, *td = &x->sub2;
    th->n = td->n = 0;
    pb_varint(th, THD_PID, x->pid);
    pb_varint(th, THD_TID, tid);
    if (name && *name)
        pb_str(th, THD_NAME, name);
    pb_varint(td, TD_UUID, uuid);
    pb_varint(td, TD_PARENT, PROCESS_UUID);
    pb_msg(td, TD_THREAD, th);
    pb_msg(&x->packet, PKT_TRACK_DESCRIPTOR, td);
    emit(x);
    return uuid;
}

/* Start a track event on the thread of tid: the packet's timestamp, the
 * event's type and track. */
static void event_begin(exporter *x, uint32_t tid, uint64_t t_ns, int type)
{
    uint64_t track = thread_track(x, tid);
    pb_varint(&x->packet, PKT_TIMESTAMP, ts(x, t_ns));
    x->event.n = 0;
    pb_varint(&x->event, TE_TYPE, (uint64_t)type);
    pb_varint(&x->event, TE_TRACK, track);
}

static void event_end(exporter *x)
{
    pb_msg(&x->packet, PKT_TRACK_EVENT, &x->event);
    emit(x);
}

/* ------------------------------------------------------------------ events */

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
    uint64_t nid = name_iid(x, name), cs = callstack_iid(x, e->native_stack, e->py_stack);
    event_begin(x, e->tid, e->t_ns, TYPE_INSTANT);
    pb_varint(&x->event, TE_NAME_IID, nid);
    if (cs)
        pb_varint(&x->event, TE_CALLSTACK_IID, cs);
    annotation_u64(x, DA_SEQ, e->seq, 0);
    if (ptr)
        annotation_u64(x, DA_PTR, ptr, 1);
    if (size)
        annotation_u64(x, DA_SIZE, size, 0);
    event_end(x);
}

static void slice_begin(exporter *x, const tf_event *e)
{
    char name[128], b[32];
    if (e->kind == TF_EV_GC_START) {
        snprintf(name, sizeof name, "gc generation %d", e->u.gc.generation);
    } else {
        const char *op = e->u.pool_op.op == TF_POOL_OP_ALLOC ? "alloc" : e->u.pool_op.op == TF_POOL_OP_FREE ? "free"
                                                                                                           : "op";
        rn_bytes(e->u.pool_op.arg, b, sizeof b);
        if (e->u.pool_op.op == TF_POOL_OP_ALLOC)
            snprintf(name, sizeof name, "%s %s %s", pool_name(x, e->u.pool_op.pool), op, b);
        else
            snprintf(name, sizeof name, "%s %s 0x%" PRIx64, pool_name(x, e->u.pool_op.pool), op, e->u.pool_op.arg);
    }
    uint64_t nid = name_iid(x, name), cs = callstack_iid(x, e->native_stack, e->py_stack);
    event_begin(x, e->tid, e->t_ns, TYPE_BEGIN);
    pb_varint(&x->event, TE_NAME_IID, nid);
    if (cs)
        pb_varint(&x->event, TE_CALLSTACK_IID, cs);
    annotation_u64(x, DA_SEQ, e->seq, 0);
    event_end(x);
}

static void counter(exporter *x, uint64_t uuid, uint64_t t_ns, uint64_t v)
{
    pb_varint(&x->packet, PKT_TIMESTAMP, ts(x, t_ns));
    x->event.n = 0;
    pb_varint(&x->event, TE_TYPE, TYPE_COUNTER);
    pb_varint(&x->event, TE_TRACK, uuid);
    pb_varint(&x->event, TE_COUNTER, v);
    event_end(x);
}

static void counters(exporter *x, const tf_event *e)
{
    uint64_t v[RPT_SERIES_MEASURES];
    rpt_memory_now(x->r, v);
    for (int i = 0; i < RPT_SERIES_MEASURES; i++)
        if (!x->counters_written || v[i] != x->shown[i])
            counter(x, (uint64_t)(COUNTER_RESERVED + i), e->t_ns, v[i]);
    x->counters_written = 1;
    memcpy(x->shown, v, sizeof v);
}

static int on_event(void *ctx, const tf_event *e, const rp_where *w)
{
    exporter *x = ctx;
    (void)w;
    x->t_last = e->t_ns;
    if (e->seq < x->first || e->seq > x->last)
        return 0;
    if (e->kind == TF_EV_GC_START || e->kind == TF_EV_POOL_OP_BEGIN)
        slice_begin(x, e);
    else
        instant(x, e);
    if ((e->kind >= TF_EV_CUDA_ALLOC && e->kind <= TF_EV_POOL_SEGMENT) || e->kind == TF_EV_HOST_ALLOC ||
        e->kind == TF_EV_HOST_FREE)
        counters(x, e);
    return 0;
}

/* The end of a slice: at its end event, or where the log shows it was left. */
static void on_closed(void *ctx, const rp_frame *f, rp_close how, const tf_event *by)
{
    exporter *x = ctx;
    if (f->seq < x->first || f->seq > x->last)
        return;   /* its beginning was not written */
    event_begin(x, f->tid, by ? by->t_ns : x->t_last, TYPE_END);
    if (by && by->kind == TF_EV_GC_STOP && f->kind == TF_EV_GC_START) {
        annotation_u64(x, DA_COLLECTED, by->u.gc.collected, 0);
        annotation_u64(x, DA_UNCOLLECTABLE, by->u.gc.uncollectable, 0);
    } else if (how != RP_CLOSE_END) {
        annotation_str(x, DA_ENDED, how == RP_CLOSE_LEFT ? "left without its end event (raised)"
                                                         : "open at the end of the log");
    }
    event_end(x);
}

/* -------------------------------------------------------------- the file */

/* The process and counter tracks, and the annotation names, first. */
static void preamble(exporter *x)
{
    const tf_header *h = tf_reader_header(x->reader);
    pb *pd = &x->sub, *td = &x->sub2;
    pd->n = td->n = 0;
    pb_varint(pd, PD_PID, x->pid);
    pb_str(pd, PD_NAME, h->cmdline && *h->cmdline ? h->cmdline : "traced process");
    pb_varint(td, TD_UUID, PROCESS_UUID);
    pb_msg(td, TD_PROCESS, pd);
    pb_msg(&x->packet, PKT_TRACK_DESCRIPTOR, td);
    for (uint32_t i = 1; i < DA_NAMES; i++)
        named_entry(x, ID_DA_NAMES, i, da_names[i]);
    emit(x);
    static const char *const counter_names[] = {"device memory reserved", "device memory allocated",
                                                "large host buffers"};
    for (int i = 0; i < RPT_SERIES_MEASURES; i++) {
        pb *cd = &x->sub;
        cd->n = td->n = 0;
        pb_varint(cd, CD_UNIT, UNIT_BYTES);
        pb_varint(td, TD_UUID, (uint64_t)(COUNTER_RESERVED + i));
        pb_varint(td, TD_PARENT, PROCESS_UUID);
        pb_str(td, TD_NAME, counter_names[i]);
        pb_msg(td, TD_COUNTER, cd);
        pb_msg(&x->packet, PKT_TRACK_DESCRIPTOR, td);
        emit(x);
    }
}

typedef struct export_options {
    const char *const *dirs;
    int ndirs, no_stacks, run;
    uint64_t first, last;
} export_options;

static void exporter_free(exporter *x)
{
    free(x->packet.b);
    free(x->event.b);
    free(x->interned.b);
    free(x->sub.b);
    free(x->sub2.b);
    free(x->head.b);
    strings_free(&x->names);
    strings_free(&x->functions);
    rp_ptrmap_free(&x->frames);
    rp_ptrmap_free(&x->callstacks);
    rp_ptrmap_free(&x->threads);
}

static int export_log(const char *log, const char *out_path, const export_options *o)
{
    char err[512];
    rpt r;
    rpt_options ro = {.debug_dirs = o->dirs, .ndebug_dirs = o->ndirs, .progress = "trace-replay export",
                      .run = o->run};
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
    exporter x;
    memset(&x, 0, sizeof x);
    x.out = out;
    x.reader = r.reader;
    x.r = &r;
    x.pid = tf_reader_header(r.reader)->pid;
    x.t0 = tf_reader_header(r.reader)->mono_start_ns;
    x.stacks = r.stacks;
    x.no_stacks = o->no_stacks;
    x.first = o->first;
    x.last = o->last;
    x.first_packet = 1;
    rp_ptrmap_init(&x.frames);
    rp_ptrmap_init(&x.callstacks);
    rp_ptrmap_init(&x.threads);
    preamble(&x);
    rp_subscriber follow = {&x, on_event, on_closed};
    rpt_read(&r, &follow);
    uint64_t events = r.events;
    exporter_free(&x);
    rpt_free(&r);
    if (fclose(out)) {
        fprintf(stderr, "trace-replay export: %s: write failed\n", out_path);
        return 2;
    }
    fprintf(stderr, "trace-replay export: %" PRIu64 " events, %" PRIu64 " bytes (%.1f per event) in %s\n", events,
            x.bytes, events ? (double)x.bytes / (double)events : 0.0, out_path);
    return 0;
}

int cmd_export(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"perfetto", required_argument, NULL, 'p'},
        {"debug-dir", required_argument, NULL, 'd'},
        {"no-stacks", no_argument, NULL, 'n'},
        {"range", required_argument, NULL, 'r'},
        {"run", required_argument, NULL, 'R'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *out = NULL, *dirs[MAX_DEBUG_DIRS];
    export_options o = {dirs, 0, 0, 1, 0, UINT64_MAX};
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
        case 'R': o.run = atoi(optarg) > 0 ? atoi(optarg) : 1; break;
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
