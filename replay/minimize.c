/*
 * minimize.c - delta debugging over units of a log, and writing the result.
 *
 * Memory: nothing per event but a bit.  Every candidate is replayed by
 * reading the log again (the source rewinds) and feeding the events the
 * candidate keeps; units are worked out afresh on each read by a walker of
 * their own (they come out the same every time), and what the search keeps
 * is per unit: its lifetime group, and whether the group is in.  A log of
 * ten million events costs a few bytes each instead of a copy of every
 * event (about 200 bytes each before).
 */
#include "minimize.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint.h"
#include "columns.h"
#include "ptrmap.h"
#include "state.h"
#include "walk.h"
#include "xalloc.h"

/* Replays stop being worth it past this many (unless the caller says
 * otherwise): the result is still valid, only less small. */
#define MAX_TESTS 20000

/* Once every event the search can still keep fits in this many, they are
 * kept in memory (about 110 bytes each) and replays stop reading the log:
 * the search shrinks its candidate by halves, so this comes early. */
#define CACHE_MAX (1u << 18)

typedef struct search {
    const rp_options *o;
    rp_source *src;            /* read again for every replay */
    /* A search from a replay's state (a cut log's checkpoint, or a log
     * that carries one): every replay starts from it, and the events are
     * those after its event (the others are in it). */
    const rp_checkpoint *start;
    size_t n;                  /* events up to the violation: nothing after it matters */
    const char *invariant;
    uint64_t kept_diverged;    /* the candidate last kept: its model's divergences before the violation */
    uint32_t nunits;
    uint32_t *group;           /* unit -> lifetime group */
    uint32_t ngroups;
    unsigned char *on;         /* group -> in the candidate */
    uint32_t *group_events;    /* group -> events it held at the last join (at most what it keeps) */
    uint8_t *dropped;          /* per event, a bit: cut from a unit by drop_nested */
    size_t tests, max_tests;
    rp_progress *pg;
    size_t kept;               /* events in the candidate last kept */
    /* Every event the search can still keep, with its index and unit, once
     * they fit CACHE_MAX (cached): later reads go through them. */
    tf_event *cache;
    size_t *cache_index;
    uint32_t *cache_unit;
    size_t ncache, capcache;
    int cached;
} search;

static int bit(const uint8_t *b, size_t i) { return b[i >> 3] >> (i & 7) & 1; }
static void set_bit(uint8_t *b, size_t i, int v)
{
    if (v)
        b[i >> 3] |= (uint8_t)(1u << (i & 7));
    else
        b[i >> 3] &= (uint8_t)~(1u << (i & 7));
}

/* ------------------------------------------------------------------ units */

/* Units: an event outside every frame on its thread (walk.h) starts one;
 * everything until its thread is outside every frame again belongs to it,
 * the end event that closes the outermost frame included. */
typedef struct unit_thread { uint32_t unit; uint64_t joins; } unit_thread;

typedef struct units {
    rp_walk *w;
    uint32_t count;            /* units met so far */
    uint32_t current;          /* the unit of the event just walked */
    unit_thread *th;
    size_t nth, capth;
    rp_ptrmap th_index;        /* tid -> position in th */
} units;

static unit_thread *unit_thread_of(units *u, uint32_t tid)
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
    units *u = ctx;
    unit_thread *t = unit_thread_of(u, e->tid);
    if (w->depth == 0 && t->joins != e->seq)
        t->unit = u->count++;
    u->current = t->unit;
    return 0;
}

static void unit_closed(void *ctx, const rp_frame *f, rp_close how, const tf_event *by)
{
    units *u = ctx;
    if (f->depth == 0 && how == RP_CLOSE_END)
        unit_thread_of(u, f->tid)->joins = by->seq;
}

static void units_start(units *u)
{
    memset(u, 0, sizeof *u);
    rp_ptrmap_init(&u->th_index);
    u->w = rp_walk_new();
    rp_subscriber sub = {u, unit_event, unit_closed};
    rp_walk_subscribe(u->w, &sub);
}

static void units_end(units *u)
{
    rp_walk_free(u->w);
    rp_ptrmap_free(&u->th_index);
    free(u->th);
}

/* Read the log again from its first event: 0, or -1 when it no longer reads. */
static int reread(search *s)
{
    return s->src->rewind(s->src);
}

/* The next event the search is about: after the start state's, if any. */
static int next_event(search *s, tf_event *e)
{
    while (s->src->next(s->src, e))
        if (!s->start || e->seq > s->start->seq) {
            if (s->start && e->seq == s->start->seq + 1)
                e->flags &= ~TF_EVENT_AFTER_GAP;   /* what is missing before it the state holds */
            return 1;
        }
    return 0;
}

/* A replay for a candidate: from the start state when there is one (it
 * loaded once: it loads every time). */
static rp_replay *new_replay(const search *s, const rp_options *o)
{
    char err[256];
    rp_replay *r = s->start ? rp_checkpoint_start(s->start, o, err, sizeof err) : NULL;
    return r ? r : rp_replay_new(o);
}

/* Is event i (of unit u) in the candidate? */
static int kept(const search *s, size_t i, uint32_t u)
{
    return s->on[s->group[u]] && !bit(s->dropped, i);
}

/* One read of the log up to the cut: fn sees every event, its unit and
 * whether the candidate keeps it (once cached: only the events it can still
 * keep). */
static void each_event(search *s, void (*fn)(void *ctx, size_t i, const tf_event *e, uint32_t unit, int in),
                       void *ctx)
{
    if (s->cached) {
        for (size_t k = 0; k < s->ncache; k++)
            fn(ctx, s->cache_index[k], &s->cache[k], s->cache_unit[k], kept(s, s->cache_index[k], s->cache_unit[k]));
        return;
    }
    units u;
    tf_event e;
    if (reread(s) < 0)
        return;
    units_start(&u);
    for (size_t i = 0; i < s->n && next_event(s, &e); i++) {
        rp_walk_event(u.w, &e);
        fn(ctx, i, &e, u.current, s->group ? kept(s, i, u.current) : 1);
    }
    units_end(&u);
}

static void collect(void *ctx, size_t i, const tf_event *e, uint32_t unit, int in)
{
    search *s = ctx;
    if (!in || s->ncache > CACHE_MAX)
        return;
    if (s->ncache == CACHE_MAX) {
        s->ncache++;     /* too many: give up for now */
        return;
    }
    size_t had = s->capcache;
    rp_grow(&s->cache, &s->capcache, s->ncache + 1, sizeof *s->cache);
    if (s->capcache != had) {
        /* The two arrays beside the events grow with them, and only then:
         * a realloc to the same size is free in glibc but a fresh block and
         * a copy under ASan, which made this loop quadratic (e2e_seed000's
         * minimize ran past its bounds there). */
        s->cache_index = rp_xrealloc(s->cache_index, s->capcache * sizeof *s->cache_index);
        s->cache_unit = rp_xrealloc(s->cache_unit, s->capcache * sizeof *s->cache_unit);
    }
    s->cache[s->ncache] = *e;
    s->cache_index[s->ncache] = i;
    s->cache_unit[s->ncache++] = unit;
}

/* When what the search can still keep fits CACHE_MAX, keep it in memory. */
static void maybe_cache(search *s)
{
    if (s->cached || !s->group)
        return;
    size_t could = 0;
    for (uint32_t g = 0; g < s->ngroups; g++)
        could += s->on[g] ? s->group_events[g] : 0;
    if (could > CACHE_MAX)
        return;   /* no need to read the log to know */
    s->ncache = 0;
    each_event(s, collect, s);
    if (s->ncache <= CACHE_MAX) {
        s->cached = 1;
        return;
    }
    free(s->cache);
    free(s->cache_index);
    free(s->cache_unit);
    s->cache = NULL;
    s->cache_index = NULL;
    s->cache_unit = NULL;
    s->ncache = s->capcache = 0;
}

/* ------------------------------------------------------------------ tests */

typedef struct trial { search *s; rp_replay *r; int stopped; size_t fed; } trial;

static void feed(void *ctx, size_t i, const tf_event *e, uint32_t unit, int in)
{
    trial *t = ctx;
    (void)i, (void)unit;
    if (!in || t->stopped)
        return;
    t->fed++;
    t->stopped = rp_replay_event(t->r, e);
}

/* Does the candidate still break the invariant? */
static int still_breaks(search *s)
{
    s->tests++;
    rp_options o = *s->o;
    o.keep_going = 0;
    o.series = 0;
    trial t = {s, new_replay(s, &o), 0, 0};
    each_event(s, feed, &t);
    rp_replay_finish(t.r, 0);
    const rp_result *res = rp_replay_result(t.r);
    int same = res->violated && !strcmp(res->violation.invariant, s->invariant);
    uint64_t diverged = res->by_model ? res->diverged_before_violation : 0;
    rp_replay_free(t.r);
    if (same) {
        s->kept = t.fed;
        s->kept_diverged = diverged;
    }
    if (s->pg)
        rp_progress_say(s->pg, "%zu replays, %zu of %zu events kept", s->tests, s->kept, s->n);
    return same;
}

/* ------------------------------------------------------------- lifetimes */

/* Union-find root of unit u. */
static uint32_t root_of(uint32_t *parent, uint32_t u)
{
    while (parent[u] != u)
        u = parent[u] = parent[parent[u]];
    return u;
}

typedef struct joining {
    uint32_t *parent;
    uint32_t *events;          /* unit -> events of it in the candidate */
    size_t cap, capev;
    rp_ptrmap born;            /* (kind, pool, address) -> unit that handed it out */
    uint32_t nunits;
} joining;

/* A block's allocation and its free only go together: removing one leaves
 * the other a different violation (free_unknown).  Units that hand out and
 * take back the same block (pool blocks, device memory, segments) are
 * merged, so candidates drop whole lifetimes.  Events the candidate does
 * not keep tie nothing together. */
static void join_event(void *ctx, size_t i, const tf_event *e, uint32_t unit, int in)
{
    joining *j = ctx;
    (void)i;
    while (j->nunits <= unit) {
        rp_grow(&j->parent, &j->cap, (size_t)j->nunits + 1, sizeof *j->parent);
        rp_grow(&j->events, &j->capev, (size_t)j->nunits + 1, sizeof *j->events);
        j->events[j->nunits] = 0;
        j->parent[j->nunits] = j->nunits;
        j->nunits++;
    }
    uint64_t key, *u;
    int alloc;
    if (!in)
        return;
    j->events[unit]++;
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
        return;
    }
    if (alloc)
        rp_ptrmap_put(&j->born, key, unit);
    else if ((u = rp_ptrmap_get(&j->born, key)) != NULL)
        j->parent[root_of(j->parent, unit)] = root_of(j->parent, (uint32_t)*u);
}

/* Groups of units joined by lifetimes (over the events the candidate keeps
 * now), numbered densely in order of first appearance; the groups that hold
 * a kept event are on. */
static void join_lifetimes(search *s)
{
    joining j = {0};
    rp_ptrmap_init(&j.born);
    /* Every unit gets an entry, those a cached read does not visit too. */
    rp_grow(&j.parent, &j.cap, (size_t)s->nunits + 1, sizeof *j.parent);
    rp_grow(&j.events, &j.capev, (size_t)s->nunits + 1, sizeof *j.events);
    for (; j.nunits < s->nunits; j.nunits++) {
        j.parent[j.nunits] = j.nunits;
        j.events[j.nunits] = 0;
    }
    each_event(s, join_event, &j);
    rp_ptrmap_free(&j.born);
    uint32_t *id = rp_xmalloc(((size_t)j.nunits + 1) * sizeof *id), groups = 0;
    for (uint32_t u = 0; u < j.nunits; u++)
        id[u] = UINT32_MAX;
    for (uint32_t u = 0; u < j.nunits; u++) {
        uint32_t r = root_of(j.parent, u);
        if (id[r] == UINT32_MAX)
            id[r] = groups++;
        id[u] = id[r];
    }
    unsigned char *on = rp_xcalloc((size_t)groups + 1, 1);
    uint32_t *events = rp_xcalloc((size_t)groups + 1, sizeof *events);
    for (uint32_t u = 0; u < j.nunits; u++) {
        if (!s->group || s->on[s->group[u]])
            on[id[u]] = 1;
        events[id[u]] += j.events[u];
    }
    free(j.parent);
    free(j.events);
    free(s->group);
    free(s->on);
    free(s->group_events);
    s->group_events = events;
    s->group = id;
    s->nunits = j.nunits;
    s->ngroups = groups;
    s->on = on;
}

/* ------------------------------------------------------------------ ddmin */

/* ddmin over the groups currently on: try each chunk alone, then each
 * complement, refining the granularity when neither reproduces. */
static void ddmin(search *s)
{
    uint32_t n = s->ngroups;
    uint32_t *list = rp_xmalloc(((size_t)n + 1) * sizeof *list);
    unsigned char *saved = rp_xmalloc((size_t)n + 1);
    uint32_t parts = 2;
    for (;;) {
        maybe_cache(s);
        uint32_t len = 0;
        for (uint32_t g = 0; g < n; g++)
            if (s->on[g])
                list[len++] = g;
        if (len < 2 || s->tests >= s->max_tests)
            break;
        if (parts > len)
            parts = len;
        int reduced = 0;
        memcpy(saved, s->on, n);
        for (int complement = 0; complement < 2 && !reduced; complement++) {
            for (uint32_t p = 0; p < parts && !reduced && s->tests < s->max_tests; p++) {
                uint32_t lo = (uint32_t)((uint64_t)len * p / parts), hi = (uint32_t)((uint64_t)len * (p + 1) / parts);
                memset(s->on, 0, n);
                for (uint32_t k = 0; k < len; k++)
                    s->on[list[k]] = complement ? (k < lo || k >= hi) : (k >= lo && k < hi);
                if (still_breaks(s)) {
                    reduced = 1;
                    parts = complement ? (parts > 2 ? parts - 1 : 2) : 2;
                } else {
                    memcpy(s->on, saved, n);
                }
            }
        }
        if (!reduced) {
            if (parts >= len)
                break;
            parts = parts * 2 < len ? parts * 2 : len;
        }
    }
    free(list);
    free(saved);
}

/* ----------------------------------------------------------- nested drops */

/* A nested operation of the candidate, and the kept events of its thread
 * from its begin to its end. */
typedef struct nested {
    uint64_t seq;
    uint32_t tid;
    size_t *events;
    size_t n, cap;
    int closed;
} nested;

typedef struct nested_list { nested *op; size_t n, cap; } nested_list;

static void collect_nested(void *ctx, size_t i, const tf_event *e, uint32_t unit, int in)
{
    nested_list *l = ctx;
    (void)unit;
    if (!in)
        return;
    for (size_t k = 0; k < l->n; k++) {
        nested *op = &l->op[k];
        if (op->closed || op->tid != e->tid)
            continue;
        rp_grow(&op->events, &op->cap, op->n + 1, sizeof *op->events);
        op->events[op->n++] = i;
        if (e->kind == TF_EV_POOL_OP_END && e->u.pool_op.begin == op->seq)
            op->closed = 1;
    }
    if (e->kind == TF_EV_POOL_OP_BEGIN && e->parent) {
        rp_grow(&l->op, &l->cap, l->n + 1, sizeof *l->op);
        l->op[l->n++] = (nested){e->seq, e->tid, NULL, 0, 0, 0};
        nested *op = &l->op[l->n - 1];
        rp_grow(&op->events, &op->cap, 1, sizeof *op->events);
        op->events[op->n++] = i;
    }
}

/* Inside the units left, try dropping each nested operation (with what is
 * nested in it), one at a time: garbage a collection freed that the
 * violation does not need.  An operation that never ended stays. */
static void drop_nested(search *s)
{
    nested_list l = {0};
    each_event(s, collect_nested, &l);
    for (size_t k = 0; k < l.n && s->tests < s->max_tests; k++) {
        nested *op = &l.op[k];
        if (!op->closed || bit(s->dropped, op->events[0]))
            continue;
        for (size_t m = 0; m < op->n; m++)
            set_bit(s->dropped, op->events[m], 1);
        if (!still_breaks(s))
            for (size_t m = 0; m < op->n; m++)
                set_bit(s->dropped, op->events[m], 0);
    }
    for (size_t k = 0; k < l.n; k++)
        free(l.op[k].events);
    free(l.op);
}

/* The search on s (its n, invariant and source set): group and dropped
 * left saying what the small log keeps. */
static void search_run(search *s)
{
    s->dropped = rp_xcalloc(s->n / 8 + 1, 1);
    join_lifetimes(s);
    ddmin(s);
    drop_nested(s);
    /* Dropping a nested free can make the unit that allocated it
     * removable: one more round, over lifetimes of what is left. */
    join_lifetimes(s);
    ddmin(s);
}

static void search_free(search *s)
{
    free(s->group);
    free(s->on);
    free(s->group_events);
    free(s->dropped);
    free(s->cache);
    free(s->cache_index);
    free(s->cache_unit);
}

typedef struct marks { search *s; unsigned char *keep; } marks;

static void mark(void *ctx, size_t i, const tf_event *e, uint32_t unit, int in)
{
    marks *m = ctx;
    (void)e, (void)unit;
    m->keep[i] = (unsigned char)in;
}

/* A replay that starts from a state holding a violation stops at once. */
static int r_stopped_at_start(const rp_replay *r)
{
    return rp_replay_result(r)->violated;
}

size_t rp_minimize_events(const rp_options *o, const tf_event *ev, size_t n, const char *invariant,
                          unsigned char *keep)
{
    rp_source src;
    rp_source_array(&src, ev, n, 0);
    search s = {.o = o, .src = &src, .n = n, .invariant = invariant, .max_tests = MAX_TESTS};
    search_run(&s);
    memset(keep, 0, n);
    marks m = {&s, keep};
    each_event(&s, mark, &m);
    search_free(&s);
    return s.tests;
}

/* ------------------------------------------------------------------ writing */

/* A module of the old log written into the new one, loaded there now. */
typedef struct written_module {
    const tf_module *m;        /* the old log's record */
    uint32_t id;               /* its id in the new log */
} written_module;

typedef struct rewriter {
    const tf_reader *r;
    tf_writer *w;
    rp_ptrmap native, py, code, str;   /* old id -> new id */
    written_module *loaded;
    size_t nloaded, caploaded;
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

/* The addresses a module's PT_LOAD segments cover (its base alone when the
 * log gave none). */
static void module_span(const tf_module *m, uint64_t *lo, uint64_t *hi)
{
    *lo = m->base;
    *hi = m->base + 1;
    for (uint32_t i = 0; i < m->nsegments; i++) {
        uint64_t a = m->base + m->segments[i].vaddr, b = a + m->segments[i].memsz;
        if (!i || a < *lo)
            *lo = a;
        if (!i || b > *hi)
            *hi = b;
    }
}

/* Makes m loaded in the new log, unloading first what is loaded there over
 * its addresses: a reader resolves a stack's frames with the modules loaded
 * when the stack was defined, so two libraries loaded in turn at one base
 * keep their own frames (all modules written at the start gave the later
 * one both).  0, or -1 out of memory. */
static int ensure_module(rewriter *x, const tf_module *m)
{
    for (size_t i = 0; i < x->nloaded; i++)
        if (x->loaded[i].m == m)
            return 0;
    uint64_t lo, hi;
    module_span(m, &lo, &hi);
    for (size_t i = x->nloaded; i-- > 0;) {
        uint64_t a, b;
        module_span(x->loaded[i].m, &a, &b);
        if (a < hi && lo < b) {
            tf_write_module_unload(x->w, x->loaded[i].id);
            x->loaded[i] = x->loaded[--x->nloaded];
            /* As the recorder does at an unload: the same addresses met
             * again are another stack, not the one interned before. */
            tf_writer_forget_native_stacks(x->w);
        }
    }
    if (x->nloaded == x->caploaded) {
        size_t cap = x->caploaded ? 2 * x->caploaded : 16;
        written_module *grown = realloc(x->loaded, cap * sizeof *grown);
        if (!grown)
            return -1;
        x->loaded = grown;
        x->caploaded = cap;
    }
    uint32_t id = tf_write_module_load(x->w, m->path, m->base, m->build_id, m->build_id_len, m->segments,
                                       m->nsegments);
    x->loaded[x->nloaded++] = (written_module){.m = m, .id = id};
    return 0;
}

static uint32_t re_native(rewriter *x, uint32_t id)
{
    uint32_t nid;
    if (rewritten(&x->native, id, &nid))
        return nid;
    const uint64_t *ips;
    uint32_t n;
    if (!tf_reader_native_stack(x->r, id, &ips, &n))
        return remember(&x->native, id, 0);
    for (uint32_t i = 0; i < n; i++) {
        const tf_module *m = tf_reader_stack_module(x->r, id, ips[i]);
        if (m && ensure_module(x, m) < 0)
            return remember(&x->native, id, 0);
    }
    return remember(&x->native, id, tf_write_native_stack(x->w, ips, n));
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

/* Modules are written as stacks need them (ensure_module). */
static void write_definitions(rewriter *x)
{
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

/* The small log's events are written as column blocks, as the recorder writes: as
 * records it took more bytes than the log it came from whenever the search
 * kept most events (seed 000's pool stream: 4.6 bytes an event against 1.5,
 * FORMAT.md section 15).  One encoder for the whole file (a block goes on
 * from the state the previous one left); NULL writes records. */
typedef struct writing {
    search *s;
    rewriter x;
    rp_ptrmap seqs;            /* old seq -> new */
    tf_chunk chunk;
    tf_colenc *enc;
    uint64_t tunit;            /* the log's time unit: steps of whole units are short */
    int fd, rc;
    uint64_t seq;
    tf_event last;
} writing;

static int flush(writing *wr)
{
    tf_writer_seal(wr->x.w, &wr->chunk);
    return tf_chunk_write_columns(wr->fd, &wr->chunk, wr->enc, wr->tunit, NULL, 3);
}

/* The time unit of the header's settings (time_unit_ns=N), 1 without one.
 * Only a size matter: the encoder falls back to 1 ns for a block with a
 * step that is not a whole number of units. */
static uint64_t time_unit_of(const tf_header *h)
{
    const char *key = "time_unit_ns=", *s = h->settings;
    for (const char *p = s; p && (p = strstr(p, key)) != NULL; p++)
        if (p == s || p[-1] == ';') {
            unsigned long long unit = strtoull(p + strlen(key), NULL, 10);
            return unit ? unit : 1;
        }
    return 1;
}

static void write_kept(void *ctx, size_t i, const tf_event *ev, uint32_t unit, int in)
{
    writing *wr = ctx;
    (void)i, (void)unit;
    wr->last = *ev;
    wr->x.r = wr->s->src->reader;   /* ids mean the same in every read */
    if (!in || ev->kind == TF_EV_END || wr->rc)
        return;
    tf_event e = *ev;
    uint64_t *p;
    rp_ptrmap_put(&wr->seqs, e.seq, ++wr->seq);
    e.seq = wr->seq;
    /* Events the start state holds keep their numbers (a frame open in it). */
    uint64_t held = wr->s->start ? wr->s->start->seq : 0;
    if (e.parent > held)
        e.parent = (p = rp_ptrmap_get(&wr->seqs, e.parent)) ? *p : 0;
    if (e.kind == TF_EV_POOL_OP_END && e.u.pool_op.begin > held)
        e.u.pool_op.begin = (p = rp_ptrmap_get(&wr->seqs, e.u.pool_op.begin)) ? *p : 0;
    if (e.kind == TF_EV_RELEASE_FAILED && e.u.release_failed.release > held)
        e.u.release_failed.release = (p = rp_ptrmap_get(&wr->seqs, e.u.release_failed.release)) ? *p : 0;
    if (e.kind == TF_EV_MARK)
        e.u.mark.text = re_string(&wr->x, e.u.mark.text);
    if (e.kind == TF_EV_PY_DOUBLE_INIT)
        e.u.double_init.type_name = re_string(&wr->x, e.u.double_init.type_name);
    e.native_stack = re_native(&wr->x, e.native_stack);
    e.py_stack = re_py(&wr->x, e.py_stack);
    tf_write_event(wr->x.w, &e);
    if (tf_writer_pending(wr->x.w) > (1u << 20))
        wr->rc = flush(wr);
}

static uint32_t start_native(void *x, uint32_t id) { return re_native(x, id); }
static uint32_t start_py(void *x, uint32_t id) { return re_py(x, id); }

/* The start state, as a CHECKPOINT record before the first event: the
 * state's stack ids are the cut log's, which the small log numbers afresh:
 * each stack it names is written into the small log too (the events of an
 * operation open at the state place its collections by them). */
static int write_start(search *s, rewriter *x, char *err, size_t errlen)
{
    rp_options o = *s->o;
    o.keep_going = 0;
    o.series = 0;
    rp_replay *r = rp_checkpoint_start(s->start, &o, err, errlen);
    if (!r)
        return -1;
    tf_writer *w = x->w;
    rp_replay_map_stacks(r, &(rp_stack_map){.native = start_native, .py = start_py, .ctx = x});
    rp_state_w payload = {0}, sealed = {0};
    rp_replay_save(r, &payload);
    rp_state_seal(&payload, &sealed);
    tf_write_checkpoint(w, s->start->seq, RP_CHECKPOINT_PRODUCER, sealed.buf, sealed.len);
    rp_state_w_free(&payload);
    rp_state_w_free(&sealed);
    rp_replay_free(r);
    return 0;
}

/* The small log: what the search keeps, read from the log once more (its
 * stacks, strings and modules re-interned), seq renumbered, an END record. */
static int write_log(search *s, const char *path, char *err, size_t errlen)
{
    writing wr = {.s = s, .fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)};
    if (wr.fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    /* Definitions first (modules must precede the stacks that point into
     * them): those of the whole log up to the cut, read once more. */
    tf_event e;
    if (reread(s) < 0) {
        close(wr.fd);
        snprintf(err, errlen, "the log no longer reads");
        return -1;
    }
    for (size_t i = 0; i < s->n && next_event(s, &e); i++)
        ;
    const tf_reader *r = s->src->reader;
    /* One file, never cut: the reproducer is not a segment of anything. */
    tf_header h = *tf_reader_header(r);
    h.max_bytes = 0;
    h.segment = 0;
    h.first_seq = 0;
    wr.x = (rewriter){.r = r, .w = tf_writer_new(&h)};
    wr.enc = tf_colenc_new();
    wr.tunit = time_unit_of(&h);
    write_definitions(&wr.x);
    rp_ptrmap_init(&wr.seqs);
    if (s->start && write_start(s, &wr.x, err, errlen) < 0) {
        if (wr.enc)
            tf_colenc_free(wr.enc);
        tf_writer_free(wr.x.w);
        free(wr.x.loaded);
        rp_ptrmap_free(&wr.seqs);
        close(wr.fd);
        return -1;
    }
    wr.seq = s->start ? s->start->seq : 0;   /* events go on after the state's */
    /* The header and definitions in a frame of their own (records: a block
     * is one frame, opened by FRAME, with no HEADER), so that the events'
     * frames can be blocks. */
    wr.rc = flush(&wr);
    each_event(s, write_kept, &wr);
    tf_event end = {.kind = TF_EV_END, .seq = wr.seq + 1, .tid = wr.last.tid, .t_ns = wr.last.t_ns};
    tf_write_event(wr.x.w, &end);
    s->kept = (size_t)(wr.seq - (s->start ? s->start->seq : 0));
    int rc = wr.rc ? wr.rc : flush(&wr);
    tf_chunk_free(&wr.chunk);
    if (wr.enc)
        tf_colenc_free(wr.enc);
    tf_writer_free(wr.x.w);
    rp_ptrmap_free(&wr.seqs);
    rp_ptrmap_free(&wr.x.native);
    rp_ptrmap_free(&wr.x.py);
    rp_ptrmap_free(&wr.x.code);
    rp_ptrmap_free(&wr.x.str);
    free(wr.x.loaded);
    if (close(wr.fd) < 0 && !rc)
        rc = -errno;
    if (rc)
        snprintf(err, errlen, "%s: write failed: %s", path, strerror(-rc));
    return rc ? -1 : 0;
}

int rp_minimize(const rp_options *o, rp_source *src, const rp_checkpoint *start, size_t max_replays,
                const char *out, rp_minimized *m, char *err, size_t errlen)
{
    tf_event e;
    rp_options first = *o;
    first.keep_going = 0;
    first.series = 0;
    /* The violation, and where the log can be cut: nothing after it matters. */
    search probe = {.src = src, .start = start};
    rp_replay *r = start ? rp_checkpoint_start(start, &first, err, errlen) : rp_replay_new(&first);
    if (!r)
        return 2;
    uint64_t before = rp_replay_result(r)->events;   /* held by the state */
    if (r_stopped_at_start(r)) {
        snprintf(err, errlen, "the state the log is cut to already holds the violation (event %llu): nothing after "
                 "it to minimize", (unsigned long long)rp_replay_result(r)->violation.at.seq);
        rp_replay_free(r);
        return 2;
    }
    if (start && reread(&probe) < 0) {
        rp_replay_free(r);
        snprintf(err, errlen, "the log no longer reads");
        return 2;
    }
    while (next_event(&probe, &e))
        if (rp_replay_event(r, &e))
            break;
    rp_replay_finish(r, 0);
    const rp_result *res = rp_replay_result(r);
    int rc = 0;
    memset(m, 0, sizeof *m);
    if (res->violated) {
        rp_progress pg;
        rp_progress_start(&pg, "trace-replay minimize");
        search s = {.o = o, .src = src, .start = start, .n = (size_t)(res->events - before),
                    .invariant = res->violation.invariant, .pg = &pg,
                    .max_tests = max_replays ? max_replays : MAX_TESTS};
        search_run(&s);
        rc = write_log(&s, out, err, errlen) < 0 ? 2 : 1;
        rp_progress_done(&pg);
        rp_progress_done(&src->progress);
        snprintf(m->invariant, sizeof m->invariant, "%s", s.invariant);
        m->kept = s.kept;
        if (res->by_model && res->diverged_before_violation == 0)
            m->diverged_before = s.kept_diverged;
        m->events = s.n;
        m->replays = s.tests;
        search_free(&s);
    } else {
        snprintf(err, errlen, "the log breaks no invariant: nothing to minimize");
    }
    rp_replay_free(r);
    return rc;
}
