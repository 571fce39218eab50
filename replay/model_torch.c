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
    uint64_t reserved, allocated, free_bytes, segments;
    uint32_t touched[8];
    int ntouched;
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

static void touch(torch *m, uint32_t id)
{
    if (m->ntouched < 8)
        m->touched[m->ntouched] = id;
    m->ntouched++;
}

static void to_pool(torch *m, uint32_t id)
{
    rp_block *b = &m->bl.b[id];
    rp_ordset_insert(&m->pool[b->cls], key_of(b));
    b->in_set = 1;
    m->free_bytes += b->size;
    touch(m, id);
}

static void from_pool(torch *m, uint32_t id)
{
    rp_block *b = &m->bl.b[id];
    rp_ordset_erase(&m->pool[b->cls], key_of(b));
    b->in_set = 0;
    m->free_bytes -= b->size;
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
    d->reserved = s->reserved;
    d->allocated = s->allocated;
    d->free_bytes = s->free_bytes;
    d->segments = s->segments;
    memcpy(d->touched, s->touched, sizeof d->touched);
    d->ntouched = s->ntouched;
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
        m->reserved += seg;
        m->segments++;
    }
    uint64_t rest = m->bl.b[id].size - need;
    if (cls == SMALL ? rest >= MIN_BLOCK : rest > SMALL_SIZE)
        to_pool(m, rp_blocks_split(&m->bl, id, need));
    m->bl.b[id].in_use = 1;
    m->allocated += m->bl.b[id].size;
    touch(m, id);
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
    m->bl.b[id].in_use = 0;
    m->allocated -= m->bl.b[id].size;
    uint32_t n = m->bl.b[id].next, pr = m->bl.b[id].prev;
    if (n != RP_NIL && !m->bl.b[n].in_use) {
        from_pool(m, n);
        rp_blocks_merge(&m->bl, id, n);
    }
    if (pr != RP_NIL && !m->bl.b[pr].in_use) {
        from_pool(m, pr);
        rp_blocks_merge(&m->bl, pr, id);
        id = pr;
    }
    to_pool(m, id);
    return RP_OK;
}

static int torch_release(void *p, uint64_t base, const rp_host *h)
{
    (void)h;  /* a release never breaks the model: at worst it diverged */
    torch *m = p;
    uint32_t id = rp_blocks_at(&m->bl, base);
    if (id == RP_NIL)
        return RP_UNKNOWN;
    rp_block *b = &m->bl.b[id];
    if (b->in_use || b->prev != RP_NIL || b->next != RP_NIL)
        return RP_UNKNOWN;  /* still in use here: the model diverged; the
                             * model-free checks judge the real release */
    from_pool(m, id);
    m->reserved -= b->size;
    m->segments--;
    rp_blocks_delete(&m->bl, id);
    return RP_OK;
}

static int check_one(torch *m, uint32_t id, const rp_host *h)
{
    if (!rp_blocks_live(&m->bl, id))
        return RP_OK;  /* merged away since it was touched */
    const rp_block *b = &m->bl.b[id];
    if (b->in_use && b->size < MIN_BLOCK)
        return rp_violate(h, "rounding", "block 0x%llx of %llu bytes is below the 512-byte minimum",
                          (unsigned long long)b->ptr, (unsigned long long)b->size);
    if (b->cls == SMALL && b->size > SMALL_BUFFER)
        return rp_violate(h, "pool_class", "small-pool block 0x%llx of %llu bytes exceeds a small segment",
                          (unsigned long long)b->ptr, (unsigned long long)b->size);
    return rp_blocks_check(&m->bl, id, h);
}

static int torch_check(void *p, int full, const rp_host *h)
{
    torch *m = p;
    int rc = RP_OK;
    if (full || m->ntouched > 8) {
        for (int c = SMALL; c <= LARGE && !rc; c++)
            if (!rp_ordset_sorted(&m->pool[c]))
                rc = rp_violate(h, "sorted_pool", "free blocks of the %s pool are out of (stream, size, address) "
                                "order", c == SMALL ? "small" : "large");
        for (size_t id = 0; id < m->bl.n && !rc; id++)
            rc = check_one(m, (uint32_t)id, h);
    } else {
        for (int t = 0; t < m->ntouched && !rc; t++)
            rc = check_one(m, m->touched[t], h);
    }
    m->ntouched = 0;
    if (!rc && m->allocated + m->free_bytes != m->reserved)
        rc = rp_violate(h, "accounting", "allocated %llu + free %llu != reserved %llu",
                        (unsigned long long)m->allocated, (unsigned long long)m->free_bytes,
                        (unsigned long long)m->reserved);
    return rc;
}

static void torch_stats(const void *p, rp_model_stats *st, int detail)
{
    const torch *m = p;
    memset(st, 0, sizeof *st);
    st->reserved = m->reserved;
    st->allocated = m->allocated;
    st->free_bytes = m->free_bytes;
    st->segments = m->segments;
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
