/*
 * model_torch.c - PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp).
 *
 * Requests round up to 512 bytes.  Blocks of at most 1 MiB come from the
 * small pool (2 MiB segments); larger ones from the large pool (20 MiB
 * segments for requests under 10 MiB, else the request rounded up to 2 MiB).
 * Free blocks are ordered by (stream, size, address) and the first that fits
 * is taken.  A block is split when the rest is at least 512 bytes (small
 * pool) or more than 1 MiB (large pool).  Freed blocks merge with both free
 * neighbours.  Not modelled: max_split_size, expandable segments, events
 * that defer a free (the log shows the free when it happened).
 */
#include <stdlib.h>
#include <string.h>

#include "blocks.h"
#include "rangeset.h" /* RP_NIL */
#include "xalloc.h"

#define MIN_BLOCK 512ULL
#define SMALL_SIZE (1ULL << 20)
#define SMALL_BUFFER (2ULL << 20)
#define LARGE_BUFFER (20ULL << 20)
#define MIN_LARGE_ALLOC (10ULL << 20)
#define ROUND_LARGE (2ULL << 20)

enum { SMALL, LARGE };

typedef struct torch {
    rp_blocks bl;
    rp_ordset pool[2];
    rp_model_counts count;
    rp_touched touched;
} torch;

static uint64_t round_size(uint64_t size)
{
    return size < MIN_BLOCK ? MIN_BLOCK : (size + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK;
}

static uint64_t allocation_size(uint64_t size)
{
    if (size <= SMALL_SIZE)
        return SMALL_BUFFER;
    if (size < MIN_LARGE_ALLOC)
        return LARGE_BUFFER;
    return (size + ROUND_LARGE - 1) / ROUND_LARGE * ROUND_LARGE;
}

static rp_key key_of(const rp_block *b) { return (rp_key){b->stream, b->size, b->ptr}; }

static void to_pool(torch *m, uint32_t id)
{
    rp_block *b = &m->bl.b[id];
    rp_ordset_insert(&m->pool[b->cls], key_of(b));
    b->in_set = 1;
    m->count.free_bytes += b->size;
    rp_touched_add(&m->touched, id);
}

static void from_pool(void *p, uint32_t id)
{
    torch *m = p;
    rp_block *b = &m->bl.b[id];
    rp_ordset_erase(&m->pool[b->cls], key_of(b));
    b->in_set = 0;
    m->count.free_bytes -= b->size;
}

static void *create(void)
{
    torch *m = rp_xcalloc(1, sizeof *m);
    rp_blocks_init(&m->bl);
    return m;
}

static void destroy(void *p)
{
    torch *m = p;
    rp_blocks_free(&m->bl);
    rp_ordset_free(&m->pool[SMALL]);
    rp_ordset_free(&m->pool[LARGE]);
    free(m);
}

static void copy(void *dp, const void *sp)
{
    torch *d = dp;
    const torch *s = sp;
    rp_blocks_copy(&d->bl, &s->bl);
    rp_ordset_copy(&d->pool[SMALL], &s->pool[SMALL]);
    rp_ordset_copy(&d->pool[LARGE], &s->pool[LARGE]);
    d->count = s->count;
    d->touched = s->touched;
}

static int torch_alloc(void *p, uint64_t size, uint64_t stream, const rp_host *h, uint64_t *ptr, uint64_t *granted)
{
    torch *m = p;
    uint64_t need = round_size(size);
    int cls = need <= SMALL_SIZE ? SMALL : LARGE;
    rp_ordset *pool = &m->pool[cls];
    size_t i = rp_ordset_lower(pool, (rp_key){stream, need, 0});
    uint32_t id;
    if (i < pool->n && pool->k[i].a == stream) {
        id = rp_blocks_at(&m->bl, pool->k[i].c);
        from_pool(m, id);
    } else {
        uint64_t seg = allocation_size(need);
        uint64_t base = h->segment(h->ctx, seg);
        if (!base)
            return RP_NOMEM;
        id = rp_blocks_new(&m->bl, base, seg, stream, (uint8_t)cls);
        m->count.reserved += seg;
        m->count.segments++;
    }
    uint64_t rest = m->bl.b[id].size - need;
    if (cls == SMALL ? rest >= MIN_BLOCK : rest > SMALL_SIZE)
        to_pool(m, rp_blocks_split(&m->bl, id, need));
    m->bl.b[id].in_use = 1;
    m->count.allocated += m->bl.b[id].size;
    rp_touched_add(&m->touched, id);
    *ptr = m->bl.b[id].ptr;
    *granted = m->bl.b[id].size;
    return RP_OK;
}

static int torch_free(void *p, uint64_t ptr, int nested, const rp_host *h)
{
    (void)nested;  /* C++ with its own mutex: nothing to re-enter */
    (void)h;
    torch *m = p;
    uint32_t id = rp_blocks_at(&m->bl, ptr);
    if (id == RP_NIL || !m->bl.b[id].in_use)
        return RP_UNKNOWN;
    m->count.allocated -= m->bl.b[id].size;
    to_pool(m, rp_blocks_coalesce(&m->bl, id, from_pool, m));
    return RP_OK;
}

static int torch_release(void *p, uint64_t base, const rp_host *h)
{
    (void)h;  /* a release never breaks the model: at worst it diverged */
    torch *m = p;
    return rp_blocks_release(&m->bl, base, &m->count, from_pool, m);
}

static int check_block(const rp_block *b, const rp_host *h)
{
    if (b->in_use && b->size < MIN_BLOCK)
        return rp_violate(h, "rounding", "block 0x%llx of %llu bytes is below the 512-byte minimum",
                          (unsigned long long)b->ptr, (unsigned long long)b->size);
    if (b->cls == SMALL && b->size > SMALL_BUFFER)
        return rp_violate(h, "pool_class", "small-pool block 0x%llx of %llu bytes exceeds a small segment",
                          (unsigned long long)b->ptr, (unsigned long long)b->size);
    return RP_OK;
}

static int check_pools(const void *p, const rp_host *h)
{
    const torch *m = p;
    for (int c = SMALL; c <= LARGE; c++)
        if (!rp_ordset_sorted(&m->pool[c]))
            return rp_violate(h, "sorted_pool", "free blocks of the %s pool are out of (stream, size, address) order",
                              c == SMALL ? "small" : "large");
    return RP_OK;
}

static const rp_fit_checks torch_checks = {check_pools, check_block};

static int torch_check(void *p, int full, const rp_host *h)
{
    torch *m = p;
    int rc = rp_blocks_check_touched(&m->bl, &m->touched, full, &torch_checks, m, h);
    return rc ? rc : rp_counts_check(&m->count, h);
}

static void torch_stats(const void *p, rp_model_stats *st, int detail)
{
    const torch *m = p;
    rp_counts_stats(&m->count, st);
    for (int c = SMALL; detail && c <= LARGE; c++) {
        st->free_blocks += m->pool[c].n;
        for (size_t i = 0; i < m->pool[c].n; i++)
            if (m->pool[c].k[i].b > st->largest_free)
                st->largest_free = m->pool[c].k[i].b;
    }
}

const rp_model_ops rp_model_torch = {
    "torch", "PyTorch caching allocator: 512-byte rounding, small/large pools, best fit by (stream, size, address)",
    create, destroy, copy, torch_alloc, torch_free, torch_release, torch_check, torch_stats, NULL, NULL,
};
