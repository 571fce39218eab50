/* explore.c - inject collections at re-entrancy points. */
#include "explore.h"

#include <stdlib.h>
#include <string.h>

#include "ptrmap.h"
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

/* Pass 1: which pool blocks each collection freed.  Per thread, the
 * innermost open collection (gc_start .. gc_stop) owns the frees in it. */
static void learn(explorer *x, rp_source *src)
{
    rp_ptrmap allocs;           /* (pool, block) -> seq of its allocation */
    rp_ptrmap_init(&allocs);
    uint64_t *stack = NULL;     /* open collections: (tid, seq) pairs */
    size_t nstack = 0, capstack = 0;
    tf_event e;
    while (src->next(src, &e)) {
        uint64_t key = e.u.pool.ptr ^ (uint64_t)e.u.pool.pool << 56;
        if (e.kind == TF_EV_GC_START) {
            rp_grow(&stack, &capstack, nstack + 2, sizeof *stack);
            stack[nstack++] = e.tid;
            stack[nstack++] = e.seq;
        } else if (e.kind == TF_EV_GC_STOP) {
            for (size_t i = nstack; i >= 2; i -= 2)
                if (stack[i - 2] == e.tid) {
                    memmove(stack + i - 2, stack + i, (nstack - i) * sizeof *stack);
                    nstack -= 2;
                    break;
                }
        } else if (e.kind == TF_EV_POOL_ALLOC && e.u.pool.ptr) {
            rp_ptrmap_put(&allocs, key, e.seq);
        } else if (e.kind == TF_EV_POOL_FREE && e.u.pool.ptr) {
            uint64_t gc = 0;
            for (size_t i = nstack; i >= 2 && !gc; i -= 2)
                if (stack[i - 2] == e.tid)
                    gc = stack[i - 1];
            uint64_t a = 0;
            rp_ptrmap_del(&allocs, key, &a);
            if (gc && a) {
                rp_grow(&x->f, &x->cap, x->n + 1, sizeof *x->f);
                x->f[x->n++] = (gc_free){gc, e.seq, a, e.u.pool.ptr, e.u.pool.pool};
            }
        }
    }
    free(stack);
    rp_ptrmap_free(&allocs);
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

static void probe(void *ctx, rp_replay *r, const rp_opref *op)
{
    explorer *x = ctx;
    uint64_t gc_seq = 0;
    uint32_t n = candidates(x, op->pool, op->seq, &gc_seq);
    if (!n)
        return;
    for (int point = 0; point < 4; point++) {
        rp_finding f;
        const char *where;
        int rc = rp_replay_try(r, point, x->frees, n, &f, &where);
        if (rc < 0)
            return;
        x->out->probes++;
        if (rc == 1) {
            rp_explore_result *o = x->out;
            o->found = 1;
            o->finding = f;
            o->op = *op;
            o->point = where;
            o->gc_seq = gc_seq;
            memcpy(o->frees, x->frees, n * sizeof *x->frees);
            o->nfrees = n;
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
