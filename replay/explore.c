/* explore.c - inject collections at re-entrancy points. */
#include "explore.h"

#include <stdlib.h>
#include <string.h>

#include "ptrmap.h"
#include "walk.h"
#include "xalloc.h"

/* A block some collection freed: (collection, pool, block, its allocation). */
typedef struct gc_free {
    uint64_t gc_seq, free_seq, alloc_seq, ptr;
    uint32_t pool;
} gc_free;

typedef struct explorer {
    gc_free *f;
    size_t n, cap;
    rp_explore_result *out;
    uint64_t frees[RP_EXPLORE_MAX_FREES];
} explorer;

static int by_gc(const void *a, const void *b)
{
    const gc_free *x = a, *y = b;
    if (x->gc_seq != y->gc_seq)
        return x->gc_seq < y->gc_seq ? -1 : 1;
    return x->free_seq < y->free_seq ? -1 : x->free_seq > y->free_seq;
}

/* Pass 1: which pool blocks each collection freed: the innermost collection
 * open around a pool_free on its thread owns it. */
typedef struct learner {
    explorer *x;
    rp_ptrmap allocs;           /* (pool, block) -> seq of its allocation */
} learner;

static int learn_event(void *ctx, const tf_event *e, const rp_where *w)
{
    learner *l = ctx;
    explorer *x = l->x;
    uint64_t key = e->u.pool.ptr ^ (uint64_t)e->u.pool.pool << 56;
    if (e->kind == TF_EV_POOL_ALLOC && e->u.pool.ptr) {
        rp_ptrmap_put(&l->allocs, key, e->seq);
    } else if (e->kind == TF_EV_POOL_FREE && e->u.pool.ptr) {
        const rp_frame *gc = rp_where_gc(w);
        uint64_t a = 0;
        rp_ptrmap_del(&l->allocs, key, &a);
        if (gc && a) {
            rp_grow(&x->f, &x->cap, x->n + 1, sizeof *x->f);
            x->f[x->n++] = (gc_free){gc->seq, e->seq, a, e->u.pool.ptr, e->u.pool.pool};
        }
    }
    return 0;
}

static void learn(explorer *x, rp_source *src)
{
    learner l = {x, {0}};
    rp_ptrmap_init(&l.allocs);
    rp_walk *w = rp_walk_new();
    rp_subscriber sub = {&l, learn_event, NULL};
    rp_walk_subscribe(w, &sub);
    tf_event e;
    while (src->next(src, &e))
        rp_walk_event(w, &e);
    rp_walk_free(w);
    rp_ptrmap_free(&l.allocs);
    if (x->n)   /* no collection freed anything: x->f is NULL, qsort's nonnull */
        qsort(x->f, x->n, sizeof *x->f, by_gc);
}

/* The first later collection that frees blocks of this pool already live at
 * seq t: its blocks, in the order it freed them. */
static uint32_t candidates(explorer *x, uint32_t pool, uint64_t t, uint64_t *gc_seq)
{
    size_t lo = 0, hi = x->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->f[mid].gc_seq <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Look at a few collections only: garbage far in the future is not
     * garbage yet. */
    for (int groups = 0; lo < x->n && groups < 8; groups++) {
        uint64_t gc = x->f[lo].gc_seq;
        uint32_t n = 0;
        for (; lo < x->n && x->f[lo].gc_seq == gc; lo++)
            if (x->f[lo].pool == pool && x->f[lo].alloc_seq < t && n < RP_EXPLORE_MAX_FREES)
                x->frees[n++] = x->f[lo].ptr;
        if (n) {
            *gc_seq = gc;
            return n;
        }
    }
    return 0;
}

/* One trial: the blocks to free at the point, and what broke. */
typedef struct attempt {
    explorer *x;
    uint32_t n;
    rp_finding f;
} attempt;

static void inject(void *ctx, rp_trial *t)
{
    attempt *a = ctx;
    for (uint32_t i = 0; i < a->n; i++)
        rp_trial_free(t, a->x->frees[i]);
}

static void broke(void *ctx, const rp_finding *f)
{
    attempt *a = ctx;
    a->f = *f;
}

/* Before each operation: at each re-entrancy point it reaches, a collection
 * freeing what the next later collection freed. */
static void probe(void *ctx, rp_replay *r, const rp_opref *op)
{
    explorer *x = ctx;
    uint64_t gc_seq = 0;
    attempt a = {.x = x, .n = candidates(x, op->pool, op->seq, &gc_seq)};
    if (!a.n)
        return;
    rp_trial_host th = {&a, inject, broke};
    for (int point = 0; point < 4; point++) {
        const char *where = NULL;
        int rc = rp_replay_trial(r, point, &th, &where);
        if (rc < 0)
            return;
        x->out->probes++;
        if (rc == 1) {
            rp_explore_result *o = x->out;
            o->found = 1;
            o->finding = a.f;
            o->op = *op;
            o->point = where;
            o->gc_seq = gc_seq;
            memcpy(o->frees, x->frees, a.n * sizeof *x->frees);
            o->nfrees = a.n;
            rp_replay_stop(r);
            return;
        }
    }
}

rp_replay *rp_explore(const rp_options *o, rp_source *src, rp_explore_result *out)
{
    explorer x = {0};
    memset(out, 0, sizeof *out);
    x.out = out;
    learn(&x, src);
    if (src->rewind(src) < 0) {
        free(x.f);
        return NULL;
    }
    rp_replay *r = rp_replay_new(o);
    rp_replay_set_probe(r, probe, &x);
    tf_event e;
    while (src->next(src, &e))
        if (rp_replay_event(r, &e))
            break;
    rp_replay_finish(r, !out->found && rp_source_clean_end(src));
    free(x.f);
    return r;
}
