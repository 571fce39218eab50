/*
 * model_tf_bfc.c - TensorFlow/XLA's best-fit-with-coalescing allocator
 * (xla/tsl/framework/bfc_allocator.cc, formerly tensorflow/core/common_runtime).
 *
 * Requests round up to 256 bytes.  21 bins: bin i holds free chunks of
 * [256 * 2^i, 256 * 2^(i+1)) bytes (the last one everything larger), each
 * ordered by (size, address); the search starts at the request's bin and
 * takes the first chunk that fits.  A chunk is split when it is at least
 * twice the request or the waste would reach 128 MiB (or the fragmentation
 * fraction of the memory limit).  A freed chunk merges with both free
 * neighbours.
 *
 * Regions (Extend): with allow_growth the first is 2 MiB (or the memory
 * limit if smaller) and each is the current size doubled until the request
 * fits, the next one twice as large when no doubling was needed; without
 * it (TensorFlow's default) the first region is the whole memory limit.  A
 * region never exceeds what is left under the limit, and when the device
 * refuses one the allocator asks again for 0.9 times as much (rounded up to
 * 256 bytes, in single precision as the real code computes it) until it
 * would no longer fit the request.  When nothing fits, garbage collection
 * (TF_ENABLE_GPU_GARBAGE_COLLECTION, on by default in TensorFlow) gives
 * every region without a chunk in use back to the device, in address order,
 * and extends again.
 *
 * The options come from the log's settings; without them the model learns
 * allow_growth and the limit from the size of the first region the log
 * shows, and says so.
 */
#include <stdlib.h>
#include <string.h>

#include "blocks.h"
#include "rangeset.h" /* RP_NIL */
#include "state.h"
#include "xalloc.h"

#define MIN_ALLOC 256ULL
#define NBINS 21
#define MAX_WASTE (128ULL << 20)
#define FIRST_REGION (2ULL << 20)
/* No device has 2^62 bytes: a larger request is a damaged log, and doubling
 * the region past it would wrap to zero. */
#define MAX_REGION (1ULL << 62)

typedef struct region { uint64_t base, size; } region;

typedef struct bfc {
    rp_blocks bl;
    rp_ordset bin[NBINS];
    uint64_t region;           /* curr_region_allocation_bytes_ */
    int growth;                /* allow_growth: 1, 0, or -1 not known yet */
    int gc;                    /* garbage_collection */
    uint64_t limit;            /* memory_limit_, 0 not known */
    double fraction;           /* fragmentation_fraction, 0 unset */
    region *r;                 /* regions by address */
    size_t nr, capr;
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
    m->growth = -1;
    m->gc = 1;
    return m;
}

static void destroy(void *p)
{
    bfc *m = p;
    rp_blocks_free(&m->bl);
    for (int i = 0; i < NBINS; i++)
        rp_ordset_free(&m->bin[i]);
    free(m->r);
    free(m);
}

static void copy(void *dp, const void *sp)
{
    bfc *d = dp;
    const bfc *s = sp;
    rp_blocks_copy(&d->bl, &s->bl);
    for (int i = 0; i < NBINS; i++)
        rp_ordset_copy(&d->bin[i], &s->bin[i]);
    rp_grow(&d->r, &d->capr, s->nr, sizeof *d->r);
    if (s->nr)
        memcpy(d->r, s->r, s->nr * sizeof *d->r);
    d->nr = s->nr;
    d->region = s->region;
    d->growth = s->growth;
    d->gc = s->gc;
    d->limit = s->limit;
    d->fraction = s->fraction;
    d->count = s->count;
    d->touched = s->touched;
}

static void save(const void *p, rp_state_w *w)
{
    const bfc *m = p;
    rp_state_put(w, m, sizeof *m);
    rp_blocks_save(&m->bl, w);
    for (int i = 0; i < NBINS; i++)
        rp_ordset_save(&m->bin[i], w);
    rp_state_array(w, m->r, m->nr, sizeof *m->r);
}

static int load(void *p, rp_state_r *r)
{
    bfc *m = p;   /* fresh from create: owns no buffer yet */
    rp_state_get(r, m, sizeof *m);
    rp_blocks_unhook(&m->bl);
    for (int i = 0; i < NBINS; i++)
        rp_ordset_unhook(&m->bin[i]);
    m->r = NULL;
    m->nr = m->capr = 0;
    rp_blocks_load(&m->bl, r);
    for (int i = 0; i < NBINS; i++)
        rp_ordset_load(&m->bin[i], r);
    m->r = rp_state_get_array(r, &m->nr, sizeof *m->r);
    m->capr = m->nr;
    return r->bad ? -1 : 0;
}

static void configure(void *p, const rp_settings *s, const rp_host *h)
{
    static const char *const growth[] = {"bfc.allow_growth", "env:TF_FORCE_GPU_ALLOW_GROWTH", NULL};
    static const char *const prealloc[] = {"env:XLA_PYTHON_CLIENT_PREALLOCATE", NULL};
    static const char *const gc[] = {"bfc.garbage_collection", "env:TF_ENABLE_GPU_GARBAGE_COLLECTION", NULL};
    static const char *const limit[] = {"bfc.memory_limit", NULL};
    static const char *const frac[] = {"bfc.fragmentation_fraction", NULL};
    static const char *const tf_alloc[] = {"env:TF_GPU_ALLOCATOR", NULL};
    static const char *const xla_alloc[] = {"env:XLA_PYTHON_CLIENT_ALLOCATOR", NULL};
    bfc *m = p;
    m->growth = rp_setting_bool(s, growth);
    if (m->growth < 0 && rp_setting_bool(s, prealloc) >= 0)
        m->growth = !rp_setting_bool(s, prealloc);
    int g = rp_setting_bool(s, gc);
    if (g >= 0)
        m->gc = g;
    m->limit = rp_setting_bytes(s, limit);
    const char *f = rp_setting(s, frac);
    if (f)
        m->fraction = strtod(f, NULL);
    if (m->growth == 0 && m->limit)
        m->region = rounded(m->limit);
    else if (m->growth == 1 && m->limit && m->limit < FIRST_REGION)
        m->region = rounded(m->limit);
    const char *a = rp_setting(s, tf_alloc);
    if (a && strcmp(a, "bfc"))
        rp_note(h, "TensorFlow ran with TF_GPU_ALLOCATOR=%s: not the BFC allocator this model follows", a);
    a = rp_setting(s, xla_alloc);
    if (a && strcmp(a, "default") && strcmp(a, "bfc"))
        rp_note(h, "XLA ran with XLA_PYTHON_CLIENT_ALLOCATOR=%s: not the BFC allocator this model follows", a);
}

static uint32_t find_chunk(bfc *m, uint64_t need)
{
    uint64_t waste = m->fraction > 0 && m->limit ? (uint64_t)(m->fraction * (double)m->limit) : MAX_WASTE;
    for (int b = bin_of(need); b < NBINS; b++) {
        rp_ordset *s = &m->bin[b];
        size_t i = rp_ordset_lower(s, (rp_key){need, 0, 0});
        if (i == s->n)
            continue;
        uint32_t id = rp_blocks_at(&m->bl, s->k[i].b);
        from_bin(m, id);
        uint64_t size = m->bl.b[id].size;
        if (size >= need * 2 || size - need >= waste)
            to_bin(m, rp_blocks_split(&m->bl, id, need));
        return id;
    }
    return RP_NIL;
}

static void add_region(bfc *m, uint64_t base, uint64_t size)
{
    size_t i = 0;
    while (i < m->nr && m->r[i].base < base)
        i++;
    rp_grow(&m->r, &m->capr, m->nr + 1, sizeof *m->r);
    memmove(m->r + i + 1, m->r + i, (m->nr - i) * sizeof *m->r);
    m->r[i] = (region){base, size};
    m->nr++;
}

/* The first region the log shows, when the options did not say: a
 * doubling of 2 MiB that just fits the request means allow_growth, any
 * other size is the whole memory limit (TensorFlow's default). */
static void learn(bfc *m, uint64_t need, uint64_t seen, const rp_host *h)
{
    uint64_t grown = FIRST_REGION;
    while (grown < need && grown < MAX_REGION)
        grown *= 2;
    if (seen == grown) {
        m->growth = 1;
        rp_note(h, "bfc: the log does not give allow_growth; its first region (%llu bytes) says allow_growth=true",
                (unsigned long long)seen);
    } else {
        m->growth = 0;
        m->limit = seen;
        m->region = seen;
        rp_note(h, "bfc: the log does not give allow_growth or the memory limit; its first region says "
                "allow_growth=false with a limit of %llu bytes", (unsigned long long)seen);
    }
}

/* Extend(): a new region for a request of need bytes; 0 when it cannot. */
static int extend(bfc *m, uint64_t need, const rp_host *h)
{
    if (need > MAX_REGION)
        return 0;
    uint64_t base = 0, bytes = 0;
    int asked = 0;
    if (m->growth < 0) {
        /* Options unknown: the first attempt the log shows tells them. */
        uint64_t seen = 0;
        base = h->segment(h->ctx, &seen, 0);
        if (seen) {
            learn(m, need, seen, h);
            bytes = seen;
            asked = 1;
        } else {
            m->growth = 1;
            rp_note(h, "bfc: the log gives neither allow_growth nor a first region; the model assumes "
                    "allow_growth=true");
        }
    }
    uint64_t available = UINT64_MAX;
    if (m->limit)
        available = m->limit > m->count.reserved ? (m->limit - m->count.reserved) / MIN_ALLOC * MIN_ALLOC : 0;
    if (!asked && need > available)
        return 0;
    int increased = 0;
    while (need > m->region) {
        m->region *= 2;
        increased = 1;
    }
    if (!asked) {
        bytes = m->region < available ? m->region : available;
        base = rp_segment(h, bytes, NULL);
    }
    while (!base) {
        /* kBackpedalFactor is a float: bytes * 0.9 is computed in single
         * precision before rounding up to 256 bytes. */
        uint64_t back = rounded((uint64_t)((float)bytes * 0.9f));
        if (back >= bytes)
            back = bytes - MIN_ALLOC;
        bytes = back;
        if (bytes < need)
            return 0;
        base = rp_segment(h, bytes, NULL);
    }
    if (!increased && m->region < MAX_REGION)
        m->region *= 2;
    uint32_t id = rp_blocks_new(&m->bl, base, bytes, 0, 0);
    m->count.reserved += bytes;
    m->count.segments++;
    add_region(m, base, bytes);
    to_bin(m, id);
    return 1;
}

/* DeallocateFreeRegions(): with garbage collection, every region holding no
 * chunk in use goes back, if that can make room for the request. */
static int deallocate_free_regions(bfc *m, uint64_t need, const rp_host *h)
{
    if (!m->gc)
        return 0;
    uint64_t total_free = 0;
    for (size_t i = 0; i < m->nr; i++) {
        uint32_t id = rp_blocks_at(&m->bl, m->r[i].base);
        if (id != RP_NIL && !m->bl.b[id].in_use && m->bl.b[id].next == RP_NIL)
            total_free += m->r[i].size;
    }
    if (!total_free)
        return 0;
    if (m->limit && need > m->limit - m->count.reserved + total_free)
        return 0;
    for (size_t i = 0; i < m->nr;) {
        uint32_t id = rp_blocks_at(&m->bl, m->r[i].base);
        if (id == RP_NIL || m->bl.b[id].in_use || m->bl.b[id].next != RP_NIL) {
            i++;
            continue;
        }
        from_bin(m, id);
        m->count.reserved -= m->r[i].size;
        m->count.segments--;
        rp_blocks_delete(&m->bl, id);
        rp_released(h, m->r[i].base, m->r[i].size);
        memmove(m->r + i, m->r + i + 1, (m->nr - i - 1) * sizeof *m->r);
        m->nr--;
    }
    return 1;
}

static int bfc_alloc(void *p, uint64_t size, uint64_t stream, const rp_host *h, uint64_t *ptr, uint64_t *granted)
{
    (void)stream;  /* one BFC allocator per device and stream group */
    bfc *m = p;
    uint64_t need = rounded(size);
    uint32_t id = find_chunk(m, need);
    if (id == RP_NIL && extend(m, need, h))
        id = find_chunk(m, need);
    if (id == RP_NIL && deallocate_free_regions(m, need, h) && extend(m, need, h))
        id = find_chunk(m, need);
    if (id == RP_NIL)
        return RP_NOMEM;
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

static int bfc_release(void *p, uint64_t base, uint64_t size, const rp_host *h)
{
    (void)p;
    (void)h;
    (void)base;
    (void)size;
    /* BFC gives regions back only in its own out-of-memory path (the model
     * does that, see deallocate_free_regions) and in its destructor: a
     * release the model did not make is a divergence. */
    return RP_UNKNOWN;
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
    .name = "tf-bfc",
    .summary = "TensorFlow/XLA BFC: 256-byte rounding, 21 power-of-two bins, regions, memory limit, garbage collection",
    .create = create, .destroy = destroy, .copy = copy, .save = save, .load = load, .alloc = bfc_alloc, .free = bfc_free,
    .release = bfc_release, .check = bfc_check, .stats = bfc_stats,
    .points = NULL, .point_names = NULL, .places = NULL, .configure = configure,
    .doc = "TensorFlow's and XLA's BFC allocator (bfc_allocator.cc, TensorFlow 2.x, XLA/JAX): 256-byte rounding, "
           "21 bins by (size, address), split at twice the request or the waste limit, merge with both "
           "neighbours.  Regions: allow_growth (bfc.allow_growth, TF_FORCE_GPU_ALLOW_GROWTH, "
           "XLA_PYTHON_CLIENT_PREALLOCATE=false) doubles from 2 MiB; without it the first region is the memory "
           "limit (bfc.memory_limit); Extend never asks past the limit and backs off by 0.9 when the device "
           "refuses; garbage collection (bfc.garbage_collection, TF_ENABLE_GPU_GARBAGE_COLLECTION; on unless "
           "set off) gives free regions back when nothing fits.  Without options it learns allow_growth and the "
           "limit from the first region in the log and says so.  Not followed: regions coalesced by a "
           "virtual-memory sub-allocator, timestamped (freed_by_count) chunks, spatial partitioning.",
};
