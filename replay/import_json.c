/*
 * import_json.c - `trace-replay import`: JSON lines in trace-dump --json's
 * schema back into a log, through the traceformat writer (the only encoder).
 *
 * One JSON object per line:
 *   {"kind":"header", ...}        the header's fields as trace-dump writes
 *                                 them (first line; optional)
 *   {"kind":"pool","pool":N,"name":S}   {"kind":"thread","tid":N,"name":S[,"py_name":S]}
 *   {"kind":"info","key":S,"value":S}
 *   {"kind":"module","id":N,"path":S,"base":N,"build_id":HEX,
 *    "segments":[{"vaddr":N,"memsz":N,"flags":N}]}   ("id" optional)
 *   {"kind":"module_unload","id":N}   (a module line's id)
 *   events: {"seq","tid","t_ns","kind","parent", the kind's fields by
 *            trace-dump's names, "native_stack":[{"ip",...}|ip],
 *            "py_stack":[{"file","line","function"}]}
 * Sequence numbers are renumbered from 1 (parent and pool_op_end's begin
 * follow); a native frame's module, when no module line covers it, is made
 * from its "module" path and "offset".  Written by tools (the PyTorch
 * snapshot importer) and by hand, for tests and for editing a log.
 */
#include "import_json.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jsonparse.h"
#include "ptrmap.h"
#include "trace_format.h"
#include "xalloc.h"

#define FLUSH_BYTES (1u << 20)
#define MAX_FRAMES 256
#define PAGE 4096ULL

/* A module written so far: which runtime addresses it covers. */
typedef struct known_module {
    char *path;
    uint64_t base, lo, hi;     /* runtime addresses [lo, hi); empty once unloaded */
    int made;                  /* made up from frames: may widen */
    uint32_t input_id, id;     /* its "id" in the input (0: none), in the log */
    int unloaded;
} known_module;

typedef struct importer {
    tf_writer *w;
    int fd;
    tf_chunk chunk;
    jp_doc doc;
    rp_ptrmap seqs;            /* input seq -> written seq */
    uint64_t next_seq, last_t;
    known_module *mods;
    size_t nmods, capmods;
    unsigned long line;
    char err[512];
} importer;

static int failf(importer *im, const char *fmt, const char *what)
{
    snprintf(im->err, sizeof im->err, fmt, what);
    return -1;
}

static int flush(importer *im)
{
    tf_writer_seal(im->w, &im->chunk);
    int rc = tf_chunk_write(im->fd, &im->chunk, NULL, 3);
    if (rc)
        return failf(im, "%s", strerror(-rc));
    return 0;
}

/* -------------------------------------------------------------- header */

static void start(importer *im, const jp_node *o)
{
    const jp_doc *d = &im->doc;
    const char *none = "";
    /* The log written is one file: a segmented log's max_bytes, segment
     * and first_seq are not carried over. */
    tf_header h = {
        .version_major = TF_VERSION_MAJOR,
        .version_minor = TF_VERSION_MINOR,
        .pid = (uint32_t)jp_u64(d, o, "pid", 0),
        .ppid = (uint32_t)jp_u64(d, o, "ppid", 0),
        .wall_start_ns = jp_u64(d, o, "wall_start_ns", 0),
        .mono_start_ns = jp_u64(d, o, "mono_start_ns", 0),
        .hostname = jp_str(d, o, "hostname", NULL),
        .cmdline = jp_str(d, o, "cmdline", NULL),
        .exe = jp_str(d, o, "exe", NULL),
        .tracer_version = jp_str(d, o, "tracer_version", NULL),
        .settings = jp_str(d, o, "settings", NULL),
        .python_version = jp_str(d, o, "python_version", NULL),
        .cuda_runtime_version = (int32_t)jp_i64(d, o, "cuda_runtime_version", 0),
        .cuda_driver_version = (int32_t)jp_i64(d, o, "cuda_driver_version", 0),
    };
    const char **strs[] = {&h.hostname, &h.cmdline, &h.exe, &h.tracer_version, &h.settings, &h.python_version};
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
        if (!*strs[i])
            *strs[i] = none;
    if (!h.tracer_version[0])
        h.tracer_version = "trace-replay import";
    im->w = tf_writer_new(&h);
    im->last_t = h.mono_start_ns;
}

/* ------------------------------------------------------------- modules */

static uint64_t hexbyte(const char *s, int *ok)
{
    char b[3] = {s[0], s[1], 0}, *end;
    unsigned long v = strtoul(b, &end, 16);
    *ok = *ok && end == b + 2;
    return v;
}

static int module_line(importer *im, const jp_node *o)
{
    const jp_doc *d = &im->doc;
    const char *path = jp_str(d, o, "path", NULL), *hex = jp_str(d, o, "build_id", NULL);
    uint64_t base = jp_u64(d, o, "base", 0);
    uint8_t id[64];
    tf_segment segs[32];
    uint32_t nid = 0, nsegs = 0;
    int ok = 1;
    if (!path)
        return failf(im, "%s", "module without a path");
    for (; hex && hex[2 * nid] && hex[2 * nid + 1] && nid < sizeof id; nid++)
        id[nid] = (uint8_t)hexbyte(hex + 2 * nid, &ok);
    if (!ok)
        return failf(im, "bad build_id '%s'", hex);
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const jp_node *s = jp_first(d, jp_get(d, o, "segments")); s && nsegs < 32; s = jp_next(d, s)) {
        segs[nsegs] = (tf_segment){jp_u64(d, s, "vaddr", 0), jp_u64(d, s, "memsz", 0),
                                   (uint32_t)jp_u64(d, s, "flags", 0)};
        if (segs[nsegs].vaddr < lo)
            lo = segs[nsegs].vaddr;
        if (segs[nsegs].vaddr + segs[nsegs].memsz > hi)
            hi = segs[nsegs].vaddr + segs[nsegs].memsz;
        nsegs++;
    }
    uint32_t written = tf_write_module_load(im->w, path, base, nid ? id : NULL, nid, segs, nsegs);
    rp_grow(&im->mods, &im->capmods, im->nmods + 1, sizeof *im->mods);
    im->mods[im->nmods++] = (known_module){rp_xstrdup(path), base, nsegs ? base + lo : 0, nsegs ? base + hi : 0, 0,
                                           (uint32_t)jp_u64(d, o, "id", 0), written, 0};
    return 0;
}

static int module_unload_line(importer *im, const jp_node *o)
{
    uint64_t input_id = jp_u64(&im->doc, o, "id", 0);
    for (size_t i = im->nmods; i-- > 0;) {
        known_module *m = &im->mods[i];
        if (input_id && m->input_id == input_id && !m->unloaded) {
            tf_write_module_unload(im->w, m->id);
            m->lo = m->hi = 0;
            m->unloaded = 1;
            return 0;
        }
    }
    return failf(im, "%s", "module_unload of no loaded module line's id");
}

static known_module *module_covering(importer *im, uint64_t ip)
{
    for (size_t i = im->nmods; i-- > 0;)
        if (ip >= im->mods[i].lo && ip < im->mods[i].hi)
            return &im->mods[i];
    return NULL;
}

/* A frame no module line covers: make (or widen) a module from the frame's
 * path and offset, so its address resolves later. */
static void cover_frame(importer *im, uint64_t ip, const char *path, uint64_t offset)
{
    if (!path || offset > ip || module_covering(im, ip))
        return;
    uint64_t base = ip - offset, lo = offset / PAGE * PAGE, hi = lo + PAGE;
    for (size_t i = im->nmods; i-- > 0;) {
        known_module *m = &im->mods[i];
        if (m->made && m->base == base && !strcmp(m->path, path)) {
            if (m->lo - base < lo)
                lo = m->lo - base;
            if (m->hi - base > hi)
                hi = m->hi - base;
            break;
        }
    }
    tf_segment seg = {lo, hi - lo, 5 /* PF_R | PF_X */};
    uint32_t written = tf_write_module_load(im->w, path, base, NULL, 0, &seg, 1);
    rp_grow(&im->mods, &im->capmods, im->nmods + 1, sizeof *im->mods);
    im->mods[im->nmods++] = (known_module){rp_xstrdup(path), base, base + lo, base + hi, 1, 0, written, 0};
}

/* -------------------------------------------------------------- stacks */

static uint32_t native_stack(importer *im, const jp_node *arr)
{
    const jp_doc *d = &im->doc;
    uint64_t ips[MAX_FRAMES];
    uint32_t n = 0;
    for (const jp_node *f = jp_first(d, arr); f && n < MAX_FRAMES; f = jp_next(d, f)) {
        if (f->type == JP_INT) {
            ips[n++] = f->u;
            continue;
        }
        ips[n] = jp_u64(d, f, "ip", 0);
        cover_frame(im, ips[n], jp_str(d, f, "module", NULL), jp_u64(d, f, "offset", UINT64_MAX));
        n++;
    }
    return n ? tf_write_native_stack(im->w, ips, n) : 0;
}

static uint32_t string_id(importer *im, const char *s)
{
    return s ? tf_write_string(im->w, s, strlen(s)) : 0;
}

static uint32_t py_stack(importer *im, const jp_node *arr)
{
    const jp_doc *d = &im->doc;
    tf_py_frame frames[MAX_FRAMES];
    uint32_t n = 0;
    for (const jp_node *f = jp_first(d, arr); f && n < MAX_FRAMES; f = jp_next(d, f)) {
        uint32_t file = string_id(im, jp_str(d, f, "file", NULL));
        uint32_t func = string_id(im, jp_str(d, f, "function", NULL));
        uint32_t code = tf_write_py_code(im->w, file, func, (uint32_t)jp_u64(d, f, "first_line", 0));
        frames[n++] = (tf_py_frame){code, (uint32_t)jp_u64(d, f, "line", 0)};
    }
    return n ? tf_write_py_stack(im->w, frames, n) : 0;
}

/* -------------------------------------------------------------- events */

static int kind_of(const char *name)
{
    for (uint32_t k = TF_EV_CUDA_ALLOC; name && k < TF_KIND_MAX; k++)
        if (tf_kind_name(k) && !strcmp(tf_kind_name(k), name))
            return (int)k;
    return -1;
}

static uint32_t api_of(const jp_doc *d, const jp_node *o)
{
    const char *name = jp_str(d, o, "api", NULL);
    for (uint32_t a = 0; name && a < TF_API_COUNT; a++)
        if (!strcmp(tf_api_name(a), name))
            return a;
    return (uint32_t)jp_u64(d, o, "api", TF_API_UNKNOWN);
}

static uint32_t host_api_number(const char *name)
{
    for (uint32_t a = 1; name && a < TF_HOST_API_COUNT; a++)
        if (!strcmp(tf_host_api_name(a), name))
            return a;
    return TF_HOST_API_UNKNOWN;
}

static uint64_t seq_ref(importer *im, uint64_t old)
{
    uint64_t *v = old ? rp_ptrmap_get(&im->seqs, old) : NULL;
    return v ? *v : 0;
}

/* The kind's own fields, by the names trace-dump gives them. */
static void kind_fields(importer *im, const jp_node *o, tf_event *e)
{
    const jp_doc *d = &im->doc;
    switch (e->kind) {
    case TF_EV_CUDA_ALLOC: case TF_EV_CUDA_FREE:
        e->u.cuda.api = api_of(d, o);
        e->u.cuda.device = (int32_t)jp_i64(d, o, "device", 0);
        e->u.cuda.result = (int32_t)jp_i64(d, o, "result", 0);
        e->u.cuda.flags = (uint32_t)jp_u64(d, o, "flags", 0);
        e->u.cuda.ptr = jp_u64(d, o, "ptr", 0);
        e->u.cuda.size = jp_u64(d, o, "size", 0);
        e->u.cuda.stream = jp_u64(d, o, "stream", 0);
        break;
    case TF_EV_POOL_ALLOC: case TF_EV_POOL_FREE:
        e->u.pool.pool = (uint32_t)jp_u64(d, o, "pool", 0);
        e->u.pool.ptr = jp_u64(d, o, "ptr", 0);
        e->u.pool.requested = jp_u64(d, o, "requested", 0);
        e->u.pool.granted = jp_u64(d, o, "granted", 0);
        e->u.pool.stream = jp_u64(d, o, "stream", 0);
        break;
    case TF_EV_POOL_OP_BEGIN: case TF_EV_POOL_OP_END:
        e->u.pool_op.pool = (uint32_t)jp_u64(d, o, "pool", 0);
        e->u.pool_op.op = (uint32_t)jp_u64(d, o, "op", 0);
        e->u.pool_op.begin = seq_ref(im, jp_u64(d, o, "begin", 0));
        e->u.pool_op.arg = jp_u64(d, o, "arg", 0);
        break;
    case TF_EV_POOL_SEGMENT:
        e->u.segment.pool = (uint32_t)jp_u64(d, o, "pool", 0);
        e->u.segment.grow = (uint32_t)jp_u64(d, o, "grow", 0);
        e->u.segment.ptr = jp_u64(d, o, "ptr", 0);
        e->u.segment.size = jp_u64(d, o, "size", 0);
        break;
    case TF_EV_GC_START: case TF_EV_GC_STOP: {
        e->u.gc.generation = (int32_t)jp_i64(d, o, "generation", 0);
        e->u.gc.collected = jp_u64(d, o, "collected", 0);
        e->u.gc.uncollectable = jp_u64(d, o, "uncollectable", 0);
        e->u.gc.duration_ns = jp_u64(d, o, "duration_ns", 0);
        const jp_node *a = jp_first(d, jp_get(d, o, "allocs"));
        for (int i = 0; a && i < 3; i++, a = jp_next(d, a))
            e->u.gc.allocs[i] = a->u;
        e->u.gc.interp = jp_u64(d, o, "interp", 0);
        break;
    }
    case TF_EV_HOST_ALLOC: case TF_EV_HOST_FREE: case TF_EV_PY_ALLOC:
        e->u.host.domain = (uint32_t)jp_u64(d, o, "domain", 0);
        e->u.host.ptr = jp_u64(d, o, "ptr", 0);
        e->u.host.size = jp_u64(d, o, "size", 0);
        e->u.host.api = host_api_number(jp_str(d, o, "api", NULL));
        break;
    case TF_EV_PY_FREE:
        e->u.host.ptr = jp_u64(d, o, "ptr", 0);
        e->u.host.domain = (uint32_t)jp_u64(d, o, "domain", 0);
        break;
    case TF_EV_PY_DOUBLE_INIT:
        e->u.double_init.obj = jp_u64(d, o, "obj", 0);
        e->u.double_init.type_name = string_id(im, jp_str(d, o, "type_name", NULL));
        break;
    case TF_EV_MARK:
        e->u.mark.text = string_id(im, jp_str(d, o, "text", NULL));
        break;
    case TF_EV_RELEASE_FAILED:
        e->u.release_failed.release = seq_ref(im, jp_u64(d, o, "release", 0));
        e->u.release_failed.result = (int32_t)jp_i64(d, o, "result", 0);
        break;
    default:
        break;  /* end: the writer counts for itself */
    }
}

static int event_line(importer *im, const jp_node *o, int kind)
{
    const jp_doc *d = &im->doc;
    tf_event e;
    memset(&e, 0, sizeof e);
    e.kind = (uint32_t)kind;
    e.seq = im->next_seq++;
    e.tid = (uint32_t)jp_u64(d, o, "tid", 1);
    e.t_ns = im->last_t = jp_u64(d, o, "t_ns", im->last_t);
    e.parent = seq_ref(im, jp_u64(d, o, "parent", 0));
    e.native_stack = native_stack(im, jp_get(d, o, "native_stack"));
    e.py_stack = py_stack(im, jp_get(d, o, "py_stack"));
    kind_fields(im, o, &e);
    uint64_t old = jp_u64(d, o, "seq", 0);
    if (old)
        rp_ptrmap_put(&im->seqs, old, e.seq);
    tf_write_event(im->w, &e);
    return tf_writer_pending(im->w) >= FLUSH_BYTES ? flush(im) : 0;
}

static int line(importer *im, char *text)
{
    const jp_doc *d = &im->doc;
    if (jp_parse(&im->doc, text, im->err, sizeof im->err))
        return -1;
    const jp_node *o = &d->n[0];
    const char *kind = jp_str(d, o, "kind", NULL);
    if (o->type != JP_OBJECT || !kind)
        return failf(im, "%s", "not an object with a \"kind\"");
    if (!strcmp(kind, "header")) {
        if (im->w)
            return failf(im, "%s", "a header after other lines");
        start(im, o);
        return 0;
    }
    if (!im->w)
        start(im, NULL);
    const char *name = jp_str(d, o, "name", NULL), *key = jp_str(d, o, "key", NULL);
    const char *value = jp_str(d, o, "value", NULL);
    if (!strcmp(kind, "pool"))
        tf_write_pool(im->w, (uint32_t)jp_u64(d, o, "pool", 0), name ? name : "");
    else if (!strcmp(kind, "thread"))
        tf_write_thread_names(im->w, (uint32_t)jp_u64(d, o, "tid", 0), name ? name : "",
                              jp_str(d, o, "py_name", NULL));
    else if (!strcmp(kind, "info"))
        tf_write_info(im->w, key ? key : "", value ? value : "");
    else if (!strcmp(kind, "module"))
        return module_line(im, o);
    else if (!strcmp(kind, "module_unload"))
        return module_unload_line(im, o);
    else if (kind_of(kind) >= 0)
        return event_line(im, o, kind_of(kind));
    else
        return failf(im, "unknown kind '%s'", kind);
    return 0;
}

static int import_stream(importer *im, FILE *in)
{
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    while (!rc && (n = getline(&buf, &cap, in)) > 0) {
        im->line++;
        while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
            buf[--n] = '\0';
        if (n)
            rc = line(im, buf);
    }
    free(buf);
    if (!rc && !im->w)
        start(im, NULL);
    return rc ? rc : flush(im);
}

int rp_import(FILE *in, int fd, rp_import_result *res)
{
    importer im;
    memset(&im, 0, sizeof im);
    im.fd = fd;
    im.next_seq = 1;
    jp_init(&im.doc);
    rp_ptrmap_init(&im.seqs);
    int rc = import_stream(&im, in);
    res->events = im.next_seq - 1;
    res->line = im.line;
    snprintf(res->err, sizeof res->err, "%s", im.err);
    tf_writer_free(im.w);
    tf_chunk_free(&im.chunk);
    for (size_t i = 0; i < im.nmods; i++)
        free(im.mods[i].path);
    free(im.mods);
    rp_ptrmap_free(&im.seqs);
    jp_free(&im.doc);
    return rc;
}
