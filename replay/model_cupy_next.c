/*
 * model_cupy_next.c - CuPy 14.1+'s pool.
 *
 * Per stream, free chunks sit in one ordered set of (size, address); a
 * request (rounded up to 512 bytes) takes the best fit, splits it, and puts
 * the rest back.  Frees merge with the next then the previous free chunk.
 * The pool lock is not recursive: a free that finds it taken (a collection
 * re-entering from inside an operation) is queued, and the queue is
 * committed at the start of the next allocation.  So a re-entrant free can
 * no longer corrupt the structures; the model checks that it does not.
 */
#include <stdlib.h>
#include <string.h>

#include "blocks.h"
#include "rangeset.h" /* RP_NIL */
#include "xalloc.h"

#define UNIT 512ULL

typedef struct arena { uint64_t stream; rp_ordset set; } arena;

typedef struct cnext {
    rp_blocks bl;
    arena *a;
    size_t na, capa;
    uint64_t *queue;           /* frees waiting for the lock */
    size_t nq, capq;
    rp_model_counts count;
    rp_touched touched;
} cnext;

static rp_ordset *set_of(cnext *m, uint64_t stream)
{
    for (size_t i = 0; i < m->na; i++)
        if (m->a[i].stream == stream)
            return &m->a[i].set;
    size_t old = m->capa;
    rp_grow(&m->a, &m->capa, m->na + 1, sizeof *m->a);
    memset(m->a + old, 0, (m->capa - old) * sizeof *m->a);
    m->a[m->na].stream = stream;
    return &m->a[m->na++].set;
}

static void to_set(cnext *m, uint32_t id)
{
    rp_block *b = &m->bl.b[id];
    rp_ordset_insert(set_of(m, b->stream), (rp_key){b->size, b->ptr, 0});
    b->in_set = 1;
    m->count.free_bytes += b->size;
    rp_touched_add(&m->touched, id);
}

static void from_set(void *p, uint32_t id)
{
    cnext *m = p;
    rp_block *b = &m->bl.b[id];
    rp_ordset_erase(set_of(m, b->stream), (rp_key){b->size, b->ptr, 0});
    b->in_set = 0;
    m->count.free_bytes -= b->size;
}

static void *create(void)
{
    cnext *m = rp_xcalloc(1, sizeof *m);
    rp_blocks_init(&m->bl);
    return m;
}

static void destroy(void *p)
{
    cnext *m = p;
    rp_blocks_free(&m->bl);
    for (size_t i = 0; i < m->capa; i++)
        rp_ordset_free(&m->a[i].set);
    free(m->a);
    free(m->queue);
    free(m);
}

static void copy(void *dp, const void *sp)
{
    cnext *d = dp;
    const cnext *s = sp;
    rp_blocks_copy(&d->bl, &s->bl);
    size_t old = d->capa;
    rp_grow(&d->a, &d->capa, s->na, sizeof *d->a);
    memset(d->a + old, 0, (d->capa - old) * sizeof *d->a);
    for (size_t i = 0; i < s->na; i++) {
        d->a[i].stream = s->a[i].stream;
        rp_ordset_copy(&d->a[i].set, &s->a[i].set);
    }
    d->na = s->na;
    rp_grow(&d->queue, &d->capq, s->nq, sizeof *d->queue);
    if (s->nq)
        memcpy(d->queue, s->queue, s->nq * sizeof *d->queue);
    d->nq = s->nq;
    d->count = s->count;
    d->touched = s->touched;
}

static void do_free(cnext *m, uint32_t id)
{
    m->count.allocated -= m->bl.b[id].size;
    to_set(m, rp_blocks_coalesce(&m->bl, id, from_set, m));
}

static void commit_queue(cnext *m)
{
    for (size_t i = 0; i < m->nq; i++) {
        uint32_t id = rp_blocks_at(&m->bl, m->queue[i]);
        if (id != RP_NIL && m->bl.b[id].in_use)
            do_free(m, id);
    }
    m->nq = 0;
}

static int next_alloc(void *p, uint64_t size, uint64_t stream, const rp_host *h, uint64_t *ptr, uint64_t *granted)
{
    cnext *m = p;
    uint64_t need = (size + UNIT - 1) / UNIT * UNIT;
    commit_queue(m);
    rp_ordset *s = set_of(m, stream);
    size_t i = rp_ordset_lower(s, (rp_key){need, 0, 0});
    uint32_t id;
    if (i < s->n) {
        /* Ties in size: the real pool's choice when the log has it. */
        uint32_t hint = h->hint ? rp_blocks_at(&m->bl, h->hint) : RP_NIL;
        if (hint != RP_NIL && m->bl.b[hint].in_set && m->bl.b[hint].stream == stream &&
            m->bl.b[hint].size == s->k[i].a)
            id = hint;
        else
            id = rp_blocks_at(&m->bl, s->k[i].b);
        from_set(m, id);
        if (m->bl.b[id].size > need)
            to_set(m, rp_blocks_split(&m->bl, id, need));
    } else {
        uint64_t base = h->segment(h->ctx, need);
        if (!base)
            return RP_NOMEM;
        id = rp_blocks_new(&m->bl, base, need, stream, 0);
        m->count.reserved += need;
        m->count.segments++;
    }
    m->bl.b[id].in_use = 1;
    m->count.allocated += m->bl.b[id].size;
    rp_touched_add(&m->touched, id);
    *ptr = m->bl.b[id].ptr;
    *granted = m->bl.b[id].size;
    return RP_OK;
}

static int next_free(void *p, uint64_t ptr, int nested, const rp_host *h)
{
    (void)h;
    cnext *m = p;
    uint32_t id = rp_blocks_at(&m->bl, ptr);
    if (id == RP_NIL || !m->bl.b[id].in_use)
        return RP_UNKNOWN;
    if (nested) {
        /* The lock is held by the operation we interrupted. */
        rp_grow(&m->queue, &m->capq, m->nq + 1, sizeof *m->queue);
        m->queue[m->nq++] = ptr;
        return RP_OK;
    }
    do_free(m, id);
    return RP_OK;
}

static int next_release(void *p, uint64_t base, const rp_host *h)
{
    (void)h;  /* a release never breaks the model: at worst it diverged */
    cnext *m = p;
    return rp_blocks_release(&m->bl, base, &m->count, from_set, m);
}

static int check_sets(const void *p, const rp_host *h)
{
    const cnext *m = p;
    for (size_t i = 0; i < m->na; i++)
        if (!rp_ordset_sorted(&m->a[i].set))
            return rp_violate(h, "sorted_set", "free set of stream 0x%llx is out of (size, address) order",
                              (unsigned long long)m->a[i].stream);
    return RP_OK;
}

static const rp_fit_checks next_checks = {check_sets, NULL};

static int next_check(void *p, int full, const rp_host *h)
{
    cnext *m = p;
    int rc = rp_blocks_check_touched(&m->bl, &m->touched, full, &next_checks, m, h);
    return rc ? rc : rp_counts_check(&m->count, h);
}

static void next_stats(const void *p, rp_model_stats *st, int detail)
{
    const cnext *m = p;
    rp_counts_stats(&m->count, st);
    for (size_t i = 0; detail && i < m->na; i++) {
        st->free_blocks += m->a[i].set.n;
        if (m->a[i].set.n && m->a[i].set.k[m->a[i].set.n - 1].a > st->largest_free)
            st->largest_free = m->a[i].set.k[m->a[i].set.n - 1].a;
    }
}

const rp_model_ops rp_model_cupy_next = {
    "cupy-next", "CuPy 14.1+: best fit over (size, address) per stream; re-entrant frees queued until the next malloc",
    create, destroy, copy, next_alloc, next_free, next_release, next_check, next_stats, NULL, NULL,
};
