/* blocks.c - block lists and ordered free sets for the best-fit models. */
#include "blocks.h"

#include <stdlib.h>
#include <string.h>

#include "rangeset.h" /* RP_NIL */
#include "state.h"
#include "xalloc.h"

void rp_blocks_init(rp_blocks *s)
{
    memset(s, 0, sizeof *s);
    s->freeids = RP_NIL;
    rp_ptrmap_init(&s->by_ptr);
}

void rp_blocks_free(rp_blocks *s)
{
    free(s->b);
    rp_ptrmap_free(&s->by_ptr);
    rp_blocks_init(s);
}

void rp_blocks_copy(rp_blocks *dst, const rp_blocks *src)
{
    rp_grow(&dst->b, &dst->cap, src->n, sizeof *dst->b);
    if (src->n)
        memcpy(dst->b, src->b, src->n * sizeof *dst->b);
    dst->n = src->n;
    dst->freeids = src->freeids;
    rp_ptrmap_copy(&dst->by_ptr, &src->by_ptr);
}

uint32_t rp_blocks_new(rp_blocks *s, uint64_t ptr, uint64_t size, uint64_t stream, uint8_t cls)
{
    uint32_t id;
    if (s->freeids != RP_NIL) {
        id = s->freeids;
        s->freeids = s->b[id].next;
    } else {
        rp_grow(&s->b, &s->cap, s->n + 1, sizeof *s->b);
        id = (uint32_t)s->n++;
    }
    s->b[id] = (rp_block){.ptr = ptr, .size = size, .stream = stream, .prev = RP_NIL, .next = RP_NIL, .cls = cls};
    rp_ptrmap_put(&s->by_ptr, ptr, id);
    return id;
}

void rp_blocks_delete(rp_blocks *s, uint32_t id)
{
    rp_ptrmap_del(&s->by_ptr, s->b[id].ptr, NULL);
    s->b[id].next = s->freeids;
    s->b[id].size = 0;
    s->freeids = id;
}

uint32_t rp_blocks_at(const rp_blocks *s, uint64_t ptr)
{
    uint64_t *v = rp_ptrmap_get(&s->by_ptr, ptr);
    return v ? (uint32_t)*v : RP_NIL;
}

int rp_blocks_live(const rp_blocks *s, uint32_t id)
{
    uint64_t *v = rp_ptrmap_get(&s->by_ptr, s->b[id].ptr);
    return s->b[id].size && v && *v == id;
}

uint32_t rp_blocks_split(rp_blocks *s, uint32_t id, uint64_t size)
{
    rp_block old = s->b[id];
    uint32_t rest = rp_blocks_new(s, old.ptr + size, old.size - size, old.stream, old.cls);
    rp_block *x = &s->b[id], *r = &s->b[rest];
    x->size = size;
    r->prev = id;
    r->next = x->next;
    if (x->next != RP_NIL)
        s->b[x->next].prev = rest;
    x->next = rest;
    return rest;
}

void rp_blocks_merge(rp_blocks *s, uint32_t left, uint32_t right)
{
    rp_block *l = &s->b[left], *r = &s->b[right];
    l->size += r->size;
    l->next = r->next;
    if (r->next != RP_NIL)
        s->b[r->next].prev = left;
    rp_blocks_delete(s, right);
}

static int key_cmp(rp_key x, rp_key y)
{
    if (x.a != y.a)
        return x.a < y.a ? -1 : 1;
    if (x.b != y.b)
        return x.b < y.b ? -1 : 1;
    if (x.c != y.c)
        return x.c < y.c ? -1 : 1;
    return 0;
}

void rp_ordset_free(rp_ordset *s)
{
    free(s->k);
    memset(s, 0, sizeof *s);
}

void rp_ordset_copy(rp_ordset *dst, const rp_ordset *src)
{
    rp_grow(&dst->k, &dst->cap, src->n, sizeof *dst->k);
    if (src->n)
        memcpy(dst->k, src->k, src->n * sizeof *dst->k);
    dst->n = src->n;
}

size_t rp_ordset_lower(const rp_ordset *s, rp_key k)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (key_cmp(s->k[mid], k) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void rp_ordset_insert(rp_ordset *s, rp_key k)
{
    size_t i = rp_ordset_lower(s, k);
    rp_grow(&s->k, &s->cap, s->n + 1, sizeof *s->k);
    memmove(s->k + i + 1, s->k + i, (s->n - i) * sizeof *s->k);
    s->k[i] = k;
    s->n++;
}

int rp_ordset_erase(rp_ordset *s, rp_key k)
{
    size_t i = rp_ordset_lower(s, k);
    if (i == s->n || key_cmp(s->k[i], k))
        return 0;
    memmove(s->k + i, s->k + i + 1, (s->n - i - 1) * sizeof *s->k);
    s->n--;
    return 1;
}

int rp_ordset_sorted(const rp_ordset *s)
{
    for (size_t i = 1; i < s->n; i++)
        if (key_cmp(s->k[i - 1], s->k[i]) >= 0)
            return 0;
    return 1;
}

static int mergeable(const rp_blocks *s, uint32_t id)
{
    return id != RP_NIL && !s->b[id].in_use && !s->b[id].unmapped;
}

int rp_blocks_check(const rp_blocks *s, uint32_t id, const rp_host *h)
{
    const rp_block *b = &s->b[id];
    if (b->next != RP_NIL && (s->b[b->next].prev != id || b->ptr + b->size != s->b[b->next].ptr))
        return rp_violate(h, "neighbours", "block 0x%llx (%llu bytes) and its next block are not adjacent and linked",
                          (unsigned long long)b->ptr, (unsigned long long)b->size);
    if (b->in_use || b->unmapped)
        return RP_OK;
    if (!b->in_set)
        return rp_violate(h, "reachable", "free block 0x%llx is in no free set", (unsigned long long)b->ptr);
    if (mergeable(s, b->next) || mergeable(s, b->prev))
        return rp_violate(h, "coalesced", "free block 0x%llx has a free neighbour that was not merged",
                          (unsigned long long)b->ptr);
    return RP_OK;
}

void rp_touched_add(rp_touched *t, uint32_t id)
{
    if (t->n < RP_TOUCHED_MAX)
        t->id[t->n] = id;
    t->n++;  /* past RP_TOUCHED_MAX the next check audits every block */
}

static int check_live(const rp_blocks *s, uint32_t id, const rp_fit_checks *own, const rp_host *h)
{
    if (!rp_blocks_live(s, id))
        return RP_OK;  /* merged away since it was touched */
    if (own->block && own->block(&s->b[id], h))
        return RP_BROKEN;
    return rp_blocks_check(s, id, h);
}

int rp_blocks_check_touched(const rp_blocks *s, rp_touched *t, int full, const rp_fit_checks *own,
                            const void *model, const rp_host *h)
{
    int rc = RP_OK;
    if (full || t->n > RP_TOUCHED_MAX) {
        if (own->sets)
            rc = own->sets(model, h);
        for (size_t id = 0; id < s->n && !rc; id++)
            rc = check_live(s, (uint32_t)id, own, h);
    } else {
        for (int i = 0; i < t->n && !rc; i++)
            rc = check_live(s, t->id[i], own, h);
    }
    t->n = 0;
    return rc;
}

uint32_t rp_blocks_coalesce(rp_blocks *s, uint32_t id, rp_unlist_fn *unlist, void *model)
{
    s->b[id].in_use = 0;
    uint32_t next = s->b[id].next;
    if (mergeable(s, next)) {
        unlist(model, next);
        rp_blocks_merge(s, id, next);
    }
    uint32_t prev = s->b[id].prev;
    if (mergeable(s, prev)) {
        unlist(model, prev);
        rp_blocks_merge(s, prev, id);
        id = prev;
    }
    return id;
}

int rp_blocks_release(rp_blocks *s, uint64_t base, rp_model_counts *c, rp_unlist_fn *unlist, void *model)
{
    uint32_t id = rp_blocks_at(s, base);
    if (id == RP_NIL)
        return RP_UNKNOWN;
    const rp_block *b = &s->b[id];
    if (b->in_use || b->prev != RP_NIL || b->next != RP_NIL)
        return RP_UNKNOWN;
    unlist(model, id);
    c->reserved -= b->size;
    c->segments--;
    rp_blocks_delete(s, id);
    return RP_OK;
}

/* ------------------------------------------------------------ checkpoints */

void rp_blocks_save(const rp_blocks *s, rp_state_w *w)
{
    rp_state_array(w, s->b, s->n, sizeof *s->b);
    rp_state_ptrmap(w, &s->by_ptr);
}

void rp_blocks_unhook(rp_blocks *s)
{
    s->b = NULL;
    s->n = s->cap = 0;
    rp_ptrmap_init(&s->by_ptr);
}

void rp_blocks_load(rp_blocks *s, rp_state_r *r)
{
    s->b = rp_state_get_array(r, &s->n, sizeof *s->b);
    s->cap = s->n;
    rp_state_get_ptrmap(r, &s->by_ptr);
}

void rp_ordset_save(const rp_ordset *s, rp_state_w *w) { rp_state_array(w, s->k, s->n, sizeof *s->k); }

void rp_ordset_unhook(rp_ordset *s) { *s = (rp_ordset){0}; }

void rp_ordset_load(rp_ordset *s, rp_state_r *r)
{
    s->k = rp_state_get_array(r, &s->n, sizeof *s->k);
    s->cap = s->n;
}
