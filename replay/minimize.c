/* minimize.c - delta debugging over units of a log, and writing the result. */
#include "minimize.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptrmap.h"
#include "walk.h"
#include "xalloc.h"

/* Replays stop being worth it past this many: the result is still valid,
 * only less small. */
#define MAX_TESTS 20000

typedef struct unit { size_t first, last; } unit;  /* event index range it spans */

typedef struct search {
    const rp_options *o;
    const tf_event *ev;
    size_t n;
    const char *invariant;
    uint32_t *unit_of;         /* event -> unit */
    unsigned char *keep;       /* per event: in the candidate */
    unsigned char *mask;       /* per event: not cut by drop_nested */
    tf_event *scratch;
    size_t tests;
} search;

/* Does the candidate (the events marked in keep) still break the invariant? */
static int still_breaks(search *s)
{
    size_t m = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->keep[i])
            s->scratch[m++] = s->ev[i];
    s->tests++;
    rp_options o = *s->o;
    o.keep_going = 0;
    o.series = 0;
    rp_replay *r = rp_replay_new(&o);
    for (size_t i = 0; i < m; i++)
        if (rp_replay_event(r, &s->scratch[i]))
            break;
    rp_replay_finish(r, 0);
    const rp_result *res = rp_replay_result(r);
    int same = res->violated && !strcmp(res->violation.invariant, s->invariant);
    rp_replay_free(r);
    return same;
}

/* Units: an event outside every frame on its thread (walk.h) starts one;
 * everything until its thread is outside every frame again belongs to it,
 * the end event that closes the outermost frame included. */
typedef struct unit_thread { uint32_t unit; uint64_t joins; } unit_thread;

typedef struct unit_pass {
    search *s;
    size_t i;                  /* the event being walked */
    uint32_t units;
    unit_thread *th;
    size_t nth, capth;
    rp_ptrmap th_index;        /* tid -> position in th */
} unit_pass;

static unit_thread *unit_thread_of(unit_pass *u, uint32_t tid)
{
    uint64_t *at = rp_ptrmap_get(&u->th_index, tid);
    if (at)
        return &u->th[*at];
    rp_grow(&u->th, &u->capth, u->nth + 1, sizeof *u->th);
    u->th[u->nth] = (unit_thread){0, 0};
    rp_ptrmap_put(&u->th_index, tid, u->nth);
    return &u->th[u->nth++];
}

static int unit_event(void *ctx, const tf_event *e, const rp_where *w)
{
    unit_pass *u = ctx;
    unit_thread *t = unit_thread_of(u, e->tid);
    if (w->depth == 0 && t->joins != e->seq)
        t->unit = u->units++;
    u->s->unit_of[u->i] = t->unit;
    return 0;
}

static void unit_closed(void *ctx, const rp_frame *f, rp_close how, const tf_event *by)
{
    unit_pass *u = ctx;
    if (f->depth == 0 && how == RP_CLOSE_END)
        unit_thread_of(u, f->tid)->joins = by->seq;
}

static uint32_t make_units(search *s)
{
    unit_pass u = {s, 0, 0, NULL, 0, 0, {0}};
    rp_ptrmap_init(&u.th_index);
    rp_walk *w = rp_walk_new();
    rp_subscriber sub = {&u, unit_event, unit_closed};
    rp_walk_subscribe(w, &sub);
    for (u.i = 0; u.i < s->n; u.i++)
        rp_walk_event(w, &s->ev[u.i]);
    rp_walk_free(w);
    rp_ptrmap_free(&u.th_index);
    free(u.th);
    return u.units;
}

/* Union-find root of unit u. */
static uint32_t root_of(uint32_t *parent, uint32_t u)
{
    while (parent[u] != u)
        u = parent[u] = parent[parent[u]];
    return u;
}

/* A block's allocation and its free only go together: removing one leaves
 * the other a different violation (free_unknown).  Units that hand out and
 * take back the same block (pool blocks, device memory, segments) are
 * merged, so candidates drop whole lifetimes. */
static uint32_t join_lifetimes(search *s, uint32_t nunits)
{
    uint32_t *parent = rp_xmalloc((nunits + 1) * sizeof *parent);
    for (uint32_t u = 0; u < nunits; u++)
        parent[u] = u;
    rp_ptrmap born;  /* (kind, pool, address) -> unit that handed it out */
    rp_ptrmap_init(&born);
    for (size_t i = 0; i < s->n; i++) {
        const tf_event *e = &s->ev[i];
        uint64_t key, *u;
        int alloc;
        if (!s->mask[i])
            continue;  /* cut already: it ties nothing together */
        switch (e->kind) {
        case TF_EV_POOL_ALLOC: case TF_EV_POOL_FREE:
            key = e->u.pool.ptr ^ (uint64_t)e->u.pool.pool << 56;
            alloc = e->kind == TF_EV_POOL_ALLOC;
            break;
        case TF_EV_POOL_SEGMENT:
            key = e->u.segment.ptr ^ (uint64_t)e->u.segment.pool << 56 ^ 1ULL << 55;
            alloc = e->u.segment.grow == TF_SEGMENT_GROW;
            break;
        case TF_EV_CUDA_ALLOC: case TF_EV_CUDA_FREE:
            key = e->u.cuda.ptr ^ 1ULL << 54;
            alloc = e->kind == TF_EV_CUDA_ALLOC;
            break;
        default:
            continue;
        }
        if (alloc)
            rp_ptrmap_put(&born, key, s->unit_of[i]);
        else if ((u = rp_ptrmap_get(&born, key)) != NULL)
            parent[root_of(parent, s->unit_of[i])] = root_of(parent, (uint32_t)*u);
    }
    rp_ptrmap_free(&born);
    /* Renumber the groups densely, in order of first appearance. */
    uint32_t *id = rp_xmalloc((nunits + 1) * sizeof *id), groups = 0;
    for (uint32_t u = 0; u < nunits; u++)
        id[u] = UINT32_MAX;
    for (size_t i = 0; i < s->n; i++) {
        uint32_t r = root_of(parent, s->unit_of[i]);
        if (id[r] == UINT32_MAX)
            id[r] = groups++;
        s->unit_of[i] = id[r];
    }
    free(id);
    free(parent);
    return groups;
}

static void mark_units(search *s, const unsigned char *unit_on)
{
    for (size_t i = 0; i < s->n; i++)
        s->keep[i] = unit_on[s->unit_of[i]] && s->mask[i];
}

/* ddmin over the units currently on: try each chunk alone, then each
 * complement, refining the granularity when neither reproduces. */
static void ddmin(search *s, unsigned char *on, uint32_t nunits)
{
    uint32_t *list = rp_xmalloc(nunits * sizeof *list);
    unsigned char *trial = rp_xmalloc(nunits);
    uint32_t parts = 2;
    for (;;) {
        uint32_t len = 0;
        for (uint32_t u = 0; u < nunits; u++)
            if (on[u])
                list[len++] = u;
        if (len < 2 || s->tests >= MAX_TESTS)
            break;
        if (parts > len)
            parts = len;
        int reduced = 0;
        for (int complement = 0; complement < 2 && !reduced; complement++) {
            for (uint32_t p = 0; p < parts && !reduced && s->tests < MAX_TESTS; p++) {
                uint32_t lo = (uint32_t)((uint64_t)len * p / parts), hi = (uint32_t)((uint64_t)len * (p + 1) / parts);
                memset(trial, 0, nunits);
                for (uint32_t k = 0; k < len; k++)
                    trial[list[k]] = complement ? (k < lo || k >= hi) : (k >= lo && k < hi);
                mark_units(s, trial);
                if (still_breaks(s)) {
                    memcpy(on, trial, nunits);
                    reduced = 1;
                    parts = complement ? (parts > 2 ? parts - 1 : 2) : 2;
                }
            }
        }
        if (!reduced) {
            if (parts >= len)
                break;
            parts = parts * 2 < len ? parts * 2 : len;
        }
    }
    mark_units(s, on);
    free(list);
    free(trial);
}

/* Inside the units left, try dropping each nested operation (with what is
 * nested in it), one at a time: garbage a collection freed that the
 * violation does not need. */
static void drop_nested(search *s)
{
    for (size_t i = 0; i < s->n && s->tests < MAX_TESTS; i++) {
        const tf_event *e = &s->ev[i];
        if (!s->keep[i] || e->kind != TF_EV_POOL_OP_BEGIN || !e->parent)
            continue;
        size_t end = i + 1;
        while (end < s->n && !(s->ev[end].kind == TF_EV_POOL_OP_END && s->ev[end].u.pool_op.begin == e->seq))
            end++;
        if (end == s->n)
            continue;
        unsigned char *saved = rp_xmalloc(end - i + 1);
        memcpy(saved, s->keep + i, end - i + 1);
        for (size_t k = i; k <= end; k++)
            if (s->ev[k].tid == e->tid)
                s->keep[k] = 0;
        if (!still_breaks(s))
            memcpy(s->keep + i, saved, end - i + 1);
        free(saved);
    }
}

size_t rp_minimize_events(const rp_options *o, const tf_event *ev, size_t n, const char *invariant,
                          unsigned char *keep)
{
    search s = {o, ev, n, invariant, rp_xmalloc((n + 1) * sizeof(uint32_t)), keep, rp_xmalloc(n + 1),
                rp_xmalloc((n + 1) * sizeof(tf_event)), 0};
    memset(s.mask, 1, n + 1);
    uint32_t nraw = make_units(&s);
    uint32_t *raw = rp_xmalloc((n + 1) * sizeof *raw);
    memcpy(raw, s.unit_of, n * sizeof *raw);
    uint32_t nunits = join_lifetimes(&s, nraw);
    unsigned char *on = rp_xmalloc(nraw + 1);
    memset(on, 1, nraw + 1);
    ddmin(&s, on, nunits);
    drop_nested(&s);
    /* Dropping a nested free can make the unit that allocated it
     * removable: one more round, over lifetimes of what is left. */
    memcpy(s.mask, keep, n);
    memcpy(s.unit_of, raw, n * sizeof *raw);
    nunits = join_lifetimes(&s, nraw);
    memset(on, 0, nraw + 1);
    for (size_t i = 0; i < n; i++)
        on[s.unit_of[i]] |= keep[i];
    ddmin(&s, on, nunits);
    free(raw);
    free(on);
    free(s.mask);
    free(s.unit_of);
    free(s.scratch);
    return s.tests;
}

/* ------------------------------------------------------------------ writing */

typedef struct rewriter {
    const tf_reader *r;
    tf_writer *w;
    rp_ptrmap native, py, code, str;   /* old id -> new id */
} rewriter;

/* 1 with *nid when old id is written already (or is 0, which stays 0). */
static int rewritten(const rp_ptrmap *map, uint32_t id, uint32_t *nid)
{
    uint64_t *v = id ? rp_ptrmap_get(map, id) : NULL;
    *nid = v ? (uint32_t)*v : 0;
    return !id || v;
}

static uint32_t remember(rp_ptrmap *map, uint32_t id, uint32_t nid)
{
    rp_ptrmap_put(map, id, nid);
    return nid;
}

static uint32_t re_string(rewriter *x, uint32_t id)
{
    uint32_t nid;
    if (rewritten(&x->str, id, &nid))
        return nid;
    size_t len;
    const char *s = tf_reader_string(x->r, id, &len);
    return remember(&x->str, id, s ? tf_write_string(x->w, s, len) : 0);
}

static uint32_t re_native(rewriter *x, uint32_t id)
{
    uint32_t nid;
    if (rewritten(&x->native, id, &nid))
        return nid;
    const uint64_t *ips;
    uint32_t n;
    return remember(&x->native, id, tf_reader_native_stack(x->r, id, &ips, &n) ? tf_write_native_stack(x->w, ips, n) : 0);
}

static uint32_t re_code(rewriter *x, uint32_t id)
{
    uint32_t nid;
    if (rewritten(&x->code, id, &nid))
        return nid;
    const tf_py_code *c = tf_reader_py_code(x->r, id);
    return remember(&x->code, id,
                    c ? tf_write_py_code(x->w, re_string(x, c->file), re_string(x, c->function), c->first_line) : 0);
}

static uint32_t re_py(rewriter *x, uint32_t id)
{
    uint32_t nid;
    if (rewritten(&x->py, id, &nid))
        return nid;
    const tf_py_frame *f;
    uint32_t n;
    if (tf_reader_py_stack(x->r, id, &f, &n)) {
        tf_py_frame *nf = rp_xmalloc((n + 1) * sizeof *nf);
        for (uint32_t i = 0; i < n; i++)
            nf[i] = (tf_py_frame){re_code(x, f[i].code), f[i].line};
        nid = tf_write_py_stack(x->w, nf, n);
        free(nf);
    }
    return remember(&x->py, id, nid);
}

static void write_definitions(rewriter *x)
{
    for (uint32_t i = 0; i < tf_reader_module_count(x->r); i++) {
        const tf_module *m = tf_reader_module_at(x->r, i);
        tf_write_module_load(x->w, m->path, m->base, m->build_id, m->build_id_len, m->segments, m->nsegments);
    }
    for (uint32_t i = 0; i < tf_reader_pool_count(x->r); i++) {
        uint32_t pool;
        const char *name;
        if (tf_reader_pool_at(x->r, i, &pool, &name))
            tf_write_pool(x->w, pool, name);
    }
    for (uint32_t i = 0; i < tf_reader_thread_count(x->r); i++) {
        uint32_t tid;
        const char *name;
        if (tf_reader_thread_at(x->r, i, &tid, &name))
            tf_write_thread(x->w, tid, name);
    }
    for (uint32_t i = 0; i < tf_reader_info_count(x->r); i++) {
        const char *k, *v;
        if (tf_reader_info(x->r, i, &k, &v))
            tf_write_info(x->w, k, v);
    }
}

static int flush(tf_writer *w, tf_chunk *c, int fd)
{
    tf_writer_seal(w, c);
    return tf_chunk_write(fd, c, NULL, 3);
}

static int write_log(const tf_reader *r, const tf_event *ev, size_t n, const unsigned char *keep, const char *path,
                     char *err, size_t errlen)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    rewriter x = {r, tf_writer_new(tf_reader_header(r)), {0}, {0}, {0}, {0}};
    rp_ptrmap seqs;
    rp_ptrmap_init(&seqs);
    write_definitions(&x);
    tf_chunk chunk = {0};
    uint64_t seq = 0;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        if (!keep[i] || ev[i].kind == TF_EV_END)
            continue;
        tf_event e = ev[i];
        uint64_t *p;
        rp_ptrmap_put(&seqs, e.seq, ++seq);
        e.seq = seq;
        e.parent = (p = rp_ptrmap_get(&seqs, e.parent)) ? *p : 0;
        if (e.kind == TF_EV_POOL_OP_END)
            e.u.pool_op.begin = (p = rp_ptrmap_get(&seqs, e.u.pool_op.begin)) ? *p : 0;
        if (e.kind == TF_EV_RELEASE_FAILED)
            e.u.release_failed.release = (p = rp_ptrmap_get(&seqs, e.u.release_failed.release)) ? *p : 0;
        if (e.kind == TF_EV_MARK)
            e.u.mark.text = re_string(&x, e.u.mark.text);
        if (e.kind == TF_EV_PY_DOUBLE_INIT)
            e.u.double_init.type_name = re_string(&x, e.u.double_init.type_name);
        e.native_stack = re_native(&x, e.native_stack);
        e.py_stack = re_py(&x, e.py_stack);
        tf_write_event(x.w, &e);
        if (tf_writer_pending(x.w) > (1u << 20))
            rc = flush(x.w, &chunk, fd);
    }
    tf_event end = {.kind = TF_EV_END, .seq = seq + 1, .tid = n ? ev[n - 1].tid : 0,
                    .t_ns = n ? ev[n - 1].t_ns : 0};
    tf_write_event(x.w, &end);
    if (!rc)
        rc = flush(x.w, &chunk, fd);
    tf_chunk_free(&chunk);
    tf_writer_free(x.w);
    rp_ptrmap_free(&seqs);
    rp_ptrmap_free(&x.native);
    rp_ptrmap_free(&x.py);
    rp_ptrmap_free(&x.code);
    rp_ptrmap_free(&x.str);
    if (close(fd) < 0 && !rc)
        rc = -errno;
    if (rc)
        snprintf(err, errlen, "%s: write failed: %s", path, strerror(-rc));
    return rc ? -1 : 0;
}

int rp_minimize(const rp_options *o, rp_source *src, const char *out, FILE *progress, char *err, size_t errlen)
{
    tf_event *ev = NULL;
    size_t n = 0, cap = 0;
    tf_event e;
    rp_options first = *o;
    first.keep_going = 0;
    first.series = 0;
    rp_replay *r = rp_replay_new(&first);
    while (src->next(src, &e)) {
        rp_grow(&ev, &cap, n + 1, sizeof *ev);
        ev[n++] = e;
        rp_replay_event(r, &e);
    }
    rp_replay_finish(r, 0);
    const rp_result *res = rp_replay_result(r);
    int rc = 0;
    if (res->violated) {
        size_t upto = (size_t)res->events;  /* nothing after the violation matters */
        char invariant[sizeof res->violation.invariant];
        memcpy(invariant, res->violation.invariant, sizeof invariant);
        unsigned char *keep = rp_xcalloc(upto + 1, 1);
        size_t tests = rp_minimize_events(o, ev, upto, invariant, keep);
        size_t kept = 0;
        for (size_t i = 0; i < upto; i++)
            kept += keep[i];
        rc = write_log(src->reader, ev, upto, keep, out, err, errlen) < 0 ? 2 : 1;
        if (rc == 1 && progress)
            fprintf(progress, "minimize: %s kept in %zu of %zu events (%zu replays), written to %s\n", invariant,
                    kept, n, tests, out);
        free(keep);
    } else {
        snprintf(err, errlen, "the log breaks no invariant: nothing to minimize");
    }
    rp_replay_free(r);
    free(ev);
    return rc;
}
