/* rangeset.c - treap of disjoint ranges keyed by start address. */
#include "rangeset.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

static uint32_t prio_of(uint64_t start)
{
    start ^= start >> 31;
    start *= 0x9e3779b97f4a7c15ULL;
    return (uint32_t)(start >> 32);
}

void rp_rangeset_init(rp_rangeset *s)
{
    memset(s, 0, sizeof *s);
    s->root = RP_NIL;
    s->freelist = RP_NIL;
    s->used = 1;
}

void rp_rangeset_free(rp_rangeset *s)
{
    free(s->n);
    rp_rangeset_init(s);
}

void rp_rangeset_copy(rp_rangeset *dst, const rp_rangeset *src)
{
    rp_range *keep = dst->n;
    size_t keepcap = dst->cap;
    *dst = *src;
    dst->n = keep;
    dst->cap = keepcap;
    rp_grow(&dst->n, &dst->cap, src->used, sizeof *dst->n);
    if (src->used)
        memcpy(dst->n, src->n, src->used * sizeof *dst->n);
}

const rp_range *rp_rangeset_find(const rp_rangeset *s, uint64_t addr)
{
    uint32_t i = s->root;
    while (i != RP_NIL) {
        const rp_range *r = &s->n[i];
        if (addr < r->start)
            i = r->left;
        else if (addr >= r->end)
            i = r->right;
        else
            return r;
    }
    return NULL;
}

const rp_range *rp_rangeset_overlap(const rp_rangeset *s, uint64_t start, uint64_t end)
{
    /* Ranges are disjoint, so in start order they are also in end order: one
     * descent finds a range with start < end and r->end > start if any. */
    uint32_t i = s->root;
    while (i != RP_NIL) {
        const rp_range *r = &s->n[i];
        if (r->end <= start)
            i = r->right;
        else if (r->start >= end)
            i = r->left;
        else
            return r;
    }
    return NULL;
}

/* Split the subtree t into keys < key (*l) and >= key (*r). */
static void split(rp_rangeset *s, uint32_t t, uint64_t key, uint32_t *l, uint32_t *r)
{
    uint32_t *lp = l, *rp = r;
    while (t != RP_NIL) {
        if (s->n[t].start < key) {
            *lp = t;
            lp = &s->n[t].right;
            t = s->n[t].right;
        } else {
            *rp = t;
            rp = &s->n[t].left;
            t = s->n[t].left;
        }
    }
    *lp = RP_NIL;
    *rp = RP_NIL;
}

/* Join two treaps where every key of a is below every key of b. */
static uint32_t merge(rp_rangeset *s, uint32_t a, uint32_t b)
{
    uint32_t root = RP_NIL, *at = &root;
    while (a != RP_NIL && b != RP_NIL) {
        if (s->n[a].prio >= s->n[b].prio) {
            *at = a;
            at = &s->n[a].right;
            a = s->n[a].right;
        } else {
            *at = b;
            at = &s->n[b].left;
            b = s->n[b].left;
        }
    }
    *at = a != RP_NIL ? a : b;
    return root;
}

void rp_rangeset_insert(rp_rangeset *s, uint64_t start, uint64_t end, uint64_t val, uint64_t aux)
{
    uint32_t i;
    if (s->freelist != RP_NIL) {
        i = s->freelist;
        s->freelist = s->n[i].left;
    } else {
        rp_grow(&s->n, &s->cap, s->used + 1, sizeof *s->n);
        i = (uint32_t)s->used++;
    }
    rp_range *x = &s->n[i];
    x->start = start;
    x->end = end;
    x->val = val;
    x->aux = aux;
    x->prio = prio_of(start);
    x->left = x->right = RP_NIL;
    /* Descend while the path outranks the new node, then split below it. */
    uint32_t *at = &s->root;
    while (*at != RP_NIL && s->n[*at].prio >= x->prio)
        at = start < s->n[*at].start ? &s->n[*at].left : &s->n[*at].right;
    split(s, *at, start, &x->left, &x->right);
    *at = i;
    s->len++;
    s->bytes += end - start;
}

static uint32_t rightmost(const rp_rangeset *s, uint32_t i)
{
    while (i != RP_NIL && s->n[i].right != RP_NIL)
        i = s->n[i].right;
    return i;
}

static uint32_t leftmost(const rp_rangeset *s, uint32_t i)
{
    while (i != RP_NIL && s->n[i].left != RP_NIL)
        i = s->n[i].left;
    return i;
}

int rp_rangeset_insert_new(rp_rangeset *s, uint64_t start, uint64_t end, uint64_t val, uint64_t aux, rp_range *clash)
{
    uint32_t prio = prio_of(start), pred = RP_NIL, succ = RP_NIL;
    if (s->freelist == RP_NIL)
        rp_grow(&s->n, &s->cap, s->used + 1, sizeof *s->n);  /* before `at` points into s->n */
    uint32_t *at = &s->root;
    /* Down to where the new node goes; the last turns right and left are
     * its neighbours unless the subtree split below holds closer ones. */
    while (*at != RP_NIL && s->n[*at].prio >= prio) {
        if (start < s->n[*at].start) {
            succ = *at;
            at = &s->n[*at].left;
        } else {
            pred = *at;
            at = &s->n[*at].right;
        }
    }
    uint32_t l, r;
    split(s, *at, start, &l, &r);
    uint32_t p = l != RP_NIL ? rightmost(s, l) : pred, q = r != RP_NIL ? leftmost(s, r) : succ;
    uint32_t bad = p != RP_NIL && s->n[p].end > start ? p : q != RP_NIL && s->n[q].start < end ? q : RP_NIL;
    if (bad != RP_NIL) {
        *at = merge(s, l, r);  /* put the subtree back as it was */
        *clash = s->n[bad];
        return 0;
    }
    uint32_t i;
    if (s->freelist != RP_NIL) {
        i = s->freelist;
        s->freelist = s->n[i].left;
    } else {
        i = (uint32_t)s->used++;
    }
    s->n[i] = (rp_range){start, end, val, aux, l, r, prio};
    *at = i;
    s->len++;
    s->bytes += end - start;
    return 1;
}

int rp_rangeset_erase(rp_rangeset *s, uint64_t start, rp_range *out)
{
    uint32_t *at = &s->root;
    while (*at != RP_NIL && s->n[*at].start != start)
        at = start < s->n[*at].start ? &s->n[*at].left : &s->n[*at].right;
    if (*at == RP_NIL)
        return 0;
    uint32_t i = *at;
    if (out)
        *out = s->n[i];
    *at = merge(s, s->n[i].left, s->n[i].right);
    s->n[i].left = s->freelist;
    s->freelist = i;
    s->len--;
    s->bytes -= s->n[i].end - s->n[i].start;
    return 1;
}

static int walk(const rp_rangeset *s, uint32_t i, int (*fn)(const rp_range *, void *), void *arg)
{
    /* Iterative in-order walk: a recorded log must not be able to overflow
     * the stack by shape (the treap is balanced in expectation only). */
    uint32_t stack[128];
    int sp = 0;
    while (i != RP_NIL || sp) {
        while (i != RP_NIL) {
            if (sp == 128) {
                if (walk(s, i, fn, arg))
                    return 1;
                i = RP_NIL;
                break;
            }
            stack[sp++] = i;
            i = s->n[i].left;
        }
        if (!sp)
            break;
        i = stack[--sp];
        if (fn(&s->n[i], arg))
            return 1;
        i = s->n[i].right;
    }
    return 0;
}

int rp_rangeset_walk(const rp_rangeset *s, int (*fn)(const rp_range *r, void *arg), void *arg)
{
    return walk(s, s->root, fn, arg);
}
