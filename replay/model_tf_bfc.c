/*
 * model_tf_bfc.c - TensorFlow/XLA's best-fit-with-coalescing allocator
 * (tsl/framework/bfc_allocator.cc), with allow_growth.
 *
 * Requests round up to 256 bytes.  21 bins: bin i holds free chunks of
 * [256 * 2^i, 256 * 2^(i+1)) bytes (the last one everything larger), each
 * ordered by (size, address); the search starts at the request's bin and
 * takes the first chunk that fits.  A chunk is split when it is at least
 * twice the request or the waste would exceed 128 MiB.  A freed chunk merges
 * with both free neighbours.  Regions start at 2 MiB and double: a region is
 * the current size doubled until the request fits, and when no doubling was
 * needed the next region will be twice as large.  Regions are never freed.
 */
#include <stdlib.h>
#include <string.h>

#include "blocks.h"
#include "rangeset.h" /* RP_NIL */
#include "xalloc.h"

#define MIN_ALLOC 256ULL
#define NBINS 21
#define MAX_WASTE (128ULL << 20)
#define FIRST_REGION (2ULL << 20)

typedef struct bfc {
    rp_blocks bl;
    rp_ordset bin[NBINS];
    uint64_t region;           /* curr_region_allocation_bytes_ */
    rp_model_counts count;
    rp_touched touched;
} bfc;

static uint64_t rounded(uint64_t n)
{
    return n < MIN_ALLOC ? MIN_ALLOC : (n + MIN_ALLOC - 1) / MIN_ALLOC * MIN_ALLOC;
}

static int bin_of(uint64_t size)
{
    uint64_t v = (size < MIN_ALLOC ? MIN_ALLOC : size) >> 8;
    int b = 0;
    while (v >>= 1)
        b++;
    return b < NBINS - 1 ? b : NBINS - 1;
}

static void to_bin(bfc *m, uint32_t id)
{
    rp_block *b = &m->bl.b[id];
    rp_ordset_insert(&m->bin[bin_of(b->size)], (rp_key){b->size, b->ptr, 0});
    b->in_set = 1;
    m->count.free_bytes += b->size;
    rp_touched_add(&m->touched, id);
}

static void from_bin(void *p, uint32_t id)
{
    bfc *m = p;
    rp_block *b = &m->bl.b[id];
    rp_ordset_erase(&m->bin[bin_of(b->size)], (rp_key){b->size, b->ptr, 0});
    b->in_set = 0;
    m->count.free_bytes -= b->size;
}

static void *create(void)
{
    bfc *m = rp_xcalloc(1, sizeof *m);
    rp_blocks_init(&m->bl);
    m->region = FIRST_REGION;
    return m;
}

static void destroy(void *p)
{
    bfc *m = p;
    rp_blocks_free(&m->bl);
    for (int i = 0; i < NBINS; i++)
        rp_ordset_free(&m->bin[i]);
    free(m);
}

static void copy(void *dp, const void *sp)
{
    bfc *d = dp;
    const bfc *s = sp;
    rp_blocks_copy(&d->bl, &s->bl);
    for (int i = 0; i < NBINS; i++)
        rp_ordset_copy(&d->bin[i], &s->bin[i]);
    d->region = s->region;
    d->count = s->count;
    d->touched = s->touched;
}

static uint32_t find_chunk(bfc *m, uint64_t need)
{
    for (int b = bin_of(need); b < NBINS; b++) {
        rp_ordset *s = &m->bin[b];
        size_t i = rp_ordset_lower(s, (rp_key){need, 0, 0});
        if (i == s->n)
            continue;
        uint32_t id = rp_blocks_at(&m->bl, s->k[i].b);
        from_bin(m, id);
        uint64_t size = m->bl.b[id].size;
        if (size >= need * 2 || size - need >= MAX_WASTE)
            to_bin(m, rp_blocks_split(&m->bl, id, need));
        return id;
    }
    return RP_NIL;
}

/* No device has 2^62 bytes: a larger request is a damaged log, and doubling
 * the region past it would wrap to zero. */
#define MAX_REGION (1ULL << 62)

/* Extend(): a new region, doubling as the allocator does with allow_growth. */
static int extend(bfc *m, uint64_t need, const rp_host *h)
{
    if (need > MAX_REGION)
        return RP_NOMEM;
    int increased = 0;
    while (need > m->region) {
        m->region *= 2;
        increased = 1;
    }
    uint64_t base = h->segment(h->ctx, m->region);
    if (!base)
        return RP_NOMEM;
    uint32_t id = rp_blocks_new(&m->bl, base, m->region, 0, 0);
    m->count.reserved += m->region;
    m->count.segments++;
    to_bin(m, id);
    if (!increased && m->region < MAX_REGION)
        m->region *= 2;
    return RP_OK;
}

static int bfc_alloc(void *p, uint64_t size, uint64_t stream, const rp_host *h, uint64_t *ptr, uint64_t *granted)
{
    (void)stream;  /* one BFC allocator per device and stream group */
    bfc *m = p;
    uint64_t need = rounded(size);
    uint32_t id = find_chunk(m, need);
    if (id == RP_NIL) {
        int rc = extend(m, need, h);
        if (rc)
            return rc;
        id = find_chunk(m, need);
    }
    m->bl.b[id].in_use = 1;
    m->count.allocated += m->bl.b[id].size;
    rp_touched_add(&m->touched, id);
    *ptr = m->bl.b[id].ptr;
    *granted = m->bl.b[id].size;
    return RP_OK;
}

static int bfc_free(void *p, uint64_t ptr, int nested, const rp_host *h)
{
    (void)nested;
    (void)h;
    bfc *m = p;
    uint32_t id = rp_blocks_at(&m->bl, ptr);
    if (id == RP_NIL || !m->bl.b[id].in_use)
        return RP_UNKNOWN;
    m->count.allocated -= m->bl.b[id].size;
    to_bin(m, rp_blocks_coalesce(&m->bl, id, from_bin, m));
    return RP_OK;
}

static int bfc_release(void *p, uint64_t base, const rp_host *h)
{
    (void)p;
    (void)h;
    (void)base;
    return RP_UNKNOWN;  /* BFC keeps its regions: a release is a divergence */
}

static int check_block(const rp_block *b, const rp_host *h)
{
    if (b->size % MIN_ALLOC)
        return rp_violate(h, "rounding", "chunk 0x%llx of %llu bytes is not a multiple of 256",
                          (unsigned long long)b->ptr, (unsigned long long)b->size);
    return RP_OK;
}

static int check_bins(const void *p, const rp_host *h)
{
    const bfc *m = p;
    for (int i = 0; i < NBINS; i++) {
        if (!rp_ordset_sorted(&m->bin[i]))
            return rp_violate(h, "sorted_bin", "bin %d is out of (size, address) order", i);
        for (size_t j = 0; j < m->bin[i].n; j++)
            if (bin_of(m->bin[i].k[j].a) != i)
                return rp_violate(h, "size_class", "chunk 0x%llx of %llu bytes sits in bin %d",
                                  (unsigned long long)m->bin[i].k[j].b, (unsigned long long)m->bin[i].k[j].a, i);
    }
    return RP_OK;
}

static const rp_fit_checks bfc_checks = {check_bins, check_block};

static int bfc_check(void *p, int full, const rp_host *h)
{
    bfc *m = p;
    int rc = rp_blocks_check_touched(&m->bl, &m->touched, full, &bfc_checks, m, h);
    return rc ? rc : rp_counts_check(&m->count, h);
}

static void bfc_stats(const void *p, rp_model_stats *st, int detail)
{
    const bfc *m = p;
    rp_counts_stats(&m->count, st);
    for (int i = 0; detail && i < NBINS; i++) {
        st->free_blocks += m->bin[i].n;
        if (m->bin[i].n && m->bin[i].k[m->bin[i].n - 1].a > st->largest_free)
            st->largest_free = m->bin[i].k[m->bin[i].n - 1].a;
    }
}

const rp_model_ops rp_model_tf_bfc = {
    "tf-bfc", "TensorFlow/XLA BFC: 256-byte rounding, 21 power-of-two bins, regions doubling from 2 MiB",
    create, destroy, copy, bfc_alloc, bfc_free, bfc_release, bfc_check, bfc_stats, NULL, NULL,
};
