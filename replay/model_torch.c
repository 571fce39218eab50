/*
 * model_torch.c - PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp,
 * options from c10/core/AllocatorConfig.cpp).
 *
 * Requests round up to 512 bytes (or, with roundup_power2_divisions, to the
 * next of N divisions between two powers of two).  Blocks of at most 1 MiB
 * come from the small pool (2 MiB segments), larger ones from the large
 * pool (20 MiB segments for requests under 10 MiB, else the request rounded
 * up to 2 MiB).  Free blocks are ordered by (stream, size, address) and the
 * first that fits is taken, except that with max_split_size_mb a request
 * below it never takes an oversize block, and an oversize request takes one
 * only within max_non_split_rounding_mb (20 MiB) of its size.  A block is
 * split when the rest is at least 512 bytes (small pool, or expandable
 * segments) or the request is below max_split_size and the rest exceeds
 * 1 MiB.  Freed blocks merge with both free neighbours.
 *
 * Expandable segments: per stream and pool one reservation of address
 * space, mapped in pages (2 MiB small, 20 MiB large) at the lowest address
 * that fits, merged with the free block before it; empty_cache unmaps the
 * whole free pages of a free block.  The reservation's address comes from
 * the log (its first mapping), the following mappings are predicted.
 *
 * Not followed (said in a note when the run used them): garbage collection
 * of cached blocks (garbage_collection_threshold: it needs the
 * per-process memory fraction), CUDA-graph private pools, the
 * cudaMallocAsync backend, blocks held back by events of other streams
 * (the log shows the free when it completed).  Releases the log shows are
 * applied where they happened.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blocks.h"
#include "rangeset.h" /* RP_NIL */
#include "state.h"
#include "xalloc.h"

#define MIN_BLOCK 512ULL
#define SMALL_SIZE (1ULL << 20)
#define SMALL_BUFFER (2ULL << 20)
#define LARGE_BUFFER (20ULL << 20)
#define MIN_LARGE_ALLOC (10ULL << 20)
#define ROUND_LARGE (2ULL << 20)
#define MB (1ULL << 20)
#define DIVISION_INTERVALS 16          /* 1 MiB to 64 GiB */
/* An expandable segment reserves 1 1/8 of the device's memory; the log does
 * not say how much that is, and only a request larger than what is left of
 * it would notice.  torch.device_memory sets it. */
#define DEFAULT_DEVICE_MEMORY (1ULL << 40)

enum { SMALL, LARGE };

typedef struct torch {
    rp_blocks bl;
    rp_ordset pool[2];                 /* free mapped blocks: (stream, size, address) */
    rp_ordset unmapped[2];             /* unmapped ranges: (stream, address, 0) */
    uint64_t max_split;                /* UINT64_MAX: unlimited */
    uint64_t max_non_split_rounding;
    uint64_t divisions[DIVISION_INTERVALS];
    int expandable;
    uint64_t reservation;              /* an expandable segment's address space */
    rp_model_counts count;
    rp_touched touched;
} torch;

static const uint64_t segment_page[2] = {SMALL_BUFFER, LARGE_BUFFER};

static int log2_floor(uint64_t x)
{
    int n = 0;
    while (x >>= 1)
        n++;
    return n;
}

/* roundup_power2_next_division: the next of `divisions` equal steps
 * between the powers of two around size. */
static uint64_t next_division(uint64_t size, uint64_t divisions)
{
    if (!(size & (size - 1)))
        return size;
    uint64_t floor2 = 1ULL << log2_floor(size);
    uint64_t step = floor2 >> log2_floor(divisions);
    if (!step)
        return floor2 << 1;
    uint64_t down = size & ~(step - 1);
    return down == size ? size : down + step;
}

static uint64_t round_size(const torch *m, uint64_t size)
{
    if (size < MIN_BLOCK)
        return MIN_BLOCK;
    int index = log2_floor(size) - 20;
    index = index < 0 ? 0 : index > DIVISION_INTERVALS - 1 ? DIVISION_INTERVALS - 1 : index;
    uint64_t divisions = m->divisions[index];
    if (divisions > 1 && size > MIN_BLOCK * divisions)
        return next_division(size, divisions);
    return (size + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK;
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
static rp_key hole_key(const rp_block *b) { return (rp_key){b->stream, b->ptr, 0}; }

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
    m->max_split = UINT64_MAX;
    m->max_non_split_rounding = LARGE_BUFFER;
    m->reservation = DEFAULT_DEVICE_MEMORY + DEFAULT_DEVICE_MEMORY / 8;
    return m;
}

static void destroy(void *p)
{
    torch *m = p;
    rp_blocks_free(&m->bl);
    for (int c = SMALL; c <= LARGE; c++) {
        rp_ordset_free(&m->pool[c]);
        rp_ordset_free(&m->unmapped[c]);
    }
    free(m);
}

static void copy(void *dp, const void *sp)
{
    torch *d = dp;
    const torch *s = sp;
    rp_blocks_copy(&d->bl, &s->bl);
    for (int c = SMALL; c <= LARGE; c++) {
        rp_ordset_copy(&d->pool[c], &s->pool[c]);
        rp_ordset_copy(&d->unmapped[c], &s->unmapped[c]);
    }
    d->max_split = s->max_split;
    d->max_non_split_rounding = s->max_non_split_rounding;
    memcpy(d->divisions, s->divisions, sizeof d->divisions);
    d->expandable = s->expandable;
    d->reservation = s->reservation;
    d->count = s->count;
    d->touched = s->touched;
}

static void save(const void *p, rp_state_w *w)
{
    const torch *m = p;
    rp_state_put(w, m, sizeof *m);
    rp_blocks_save(&m->bl, w);
    for (int c = SMALL; c <= LARGE; c++) {
        rp_ordset_save(&m->pool[c], w);
        rp_ordset_save(&m->unmapped[c], w);
    }
}

static int load(void *p, rp_state_r *r)
{
    torch *m = p;   /* fresh from create: owns no buffer yet */
    rp_state_get(r, m, sizeof *m);
    rp_blocks_unhook(&m->bl);
    for (int c = SMALL; c <= LARGE; c++) {
        rp_ordset_unhook(&m->pool[c]);
        rp_ordset_unhook(&m->unmapped[c]);
    }
    rp_blocks_load(&m->bl, r);
    for (int c = SMALL; c <= LARGE; c++) {
        rp_ordset_load(&m->pool[c], r);
        rp_ordset_load(&m->unmapped[c], r);
    }
    return r->bad ? -1 : 0;
}

/* ------------------------------------------------------------- options */

/* PYTORCH_ALLOC_CONF's tokens: words and the separators , : [ ] (spaces
 * dropped), as AllocatorConfig's tokenizer cuts them. */
typedef struct tokens { char t[64][32]; int n; } tokens;

static void tokenize(const char *s, tokens *tk)
{
    tk->n = 0;
    size_t len = 0;
    for (;; s++) {
        int sep = !*s || *s == ',' || *s == ':' || *s == '[' || *s == ']';
        if (sep && len) {
            tk->t[tk->n][len] = 0;
            if (++tk->n == 64)
                return;
            len = 0;
        }
        if (!*s)
            return;
        if (sep) {
            tk->t[tk->n][0] = *s;
            tk->t[tk->n][1] = 0;
            if (++tk->n == 64)
                return;
        } else if (*s != ' ' && *s != '\t' && len + 1 < sizeof tk->t[0]) {
            tk->t[tk->n][len++] = *s;
        }
    }
}

static int is(const tokens *tk, int i, const char *word) { return i < tk->n && !strcmp(tk->t[i], word); }

/* roundup_power2_divisions: a number for every interval, or a list of
 * MiB:divisions (a power of two of MiB names its interval; the first also
 * covers the ones below it; ">" the ones from the last named on). */
static int parse_divisions(torch *m, const tokens *tk, int i)
{
    if (!is(tk, i, "[")) {
        uint64_t v = strtoull(tk->t[i], NULL, 10);
        for (int k = 0; k < DIVISION_INTERVALS; k++)
            m->divisions[k] = v;
        return i;
    }
    int first = 1, last = 0;
    while (++i < tk->n && !is(tk, i, "]")) {
        const char *what = tk->t[i];
        if (!is(tk, i + 1, ":") || i + 2 >= tk->n)
            return tk->n;
        uint64_t v = strtoull(tk->t[i + 2], NULL, 10);
        i += 2;
        if (!strcmp(what, ">")) {
            for (int k = last; k < DIVISION_INTERVALS; k++)
                m->divisions[k] = v;
        } else {
            int index = log2_floor(strtoull(what, NULL, 10) | 1);
            index = index > DIVISION_INTERVALS - 1 ? DIVISION_INTERVALS - 1 : index;
            for (int k = 0; first && k < index; k++)
                m->divisions[k] = v;
            first = 0;
            m->divisions[index] = v;
            last = index;
        }
        if (is(tk, i + 1, ","))
            i++;
    }
    return i;
}

static void parse_conf(torch *m, const char *conf, const rp_host *h)
{
    tokens tk;
    tokenize(conf, &tk);
    for (int i = 0; i < tk.n; i++) {
        const char *key = tk.t[i];
        if (!is(&tk, i + 1, ":") || i + 2 >= tk.n) {
            if (strcmp(key, ","))
                rp_note(h, "PyTorch allocator setting '%s' not understood (in \"%s\")", key, conf);
            continue;
        }
        i += 2;
        const char *val = tk.t[i];
        if (!strcmp(key, "max_split_size_mb")) {
            uint64_t mb = strtoull(val, NULL, 10);
            m->max_split = mb >= UINT64_MAX / MB ? UINT64_MAX : mb * MB;
        } else if (!strcmp(key, "max_non_split_rounding_mb")) {
            uint64_t mb = strtoull(val, NULL, 10);
            m->max_non_split_rounding = mb >= UINT64_MAX / MB ? UINT64_MAX : mb * MB;
        } else if (!strcmp(key, "roundup_power2_divisions")) {
            i = parse_divisions(m, &tk, i);
        } else if (!strcmp(key, "expandable_segments")) {
            m->expandable = !strcmp(val, "True");
        } else if (!strcmp(key, "garbage_collection_threshold")) {
            rp_note(h, "PyTorch ran with garbage_collection_threshold:%s: which cached blocks it frees depends on the "
                    "per-process memory fraction, which the log does not record; the model does not predict them "
                    "and applies the releases the log shows", val);
        } else if (!strcmp(key, "backend")) {
            if (strcmp(val, "native"))
                rp_note(h, "PyTorch ran with backend:%s: blocks come from the driver's stream-ordered pool, which "
                        "this model does not follow", val);
        } else if (!strncmp(key, "pinned_", 7) || !strcmp(key, "release_lock_on_cudamalloc") ||
                   !strcmp(key, "release_lock_on_hipmalloc") || !strcmp(key, "graph_capture_record_stream_reuse")) {
            if (is(&tk, i, "["))
                while (i < tk.n && !is(&tk, i, "]"))
                    i++;
            /* host memory, locking, capture bookkeeping: no block moves */
        } else {
            rp_note(h, "PyTorch allocator setting '%s' is not one the model knows; ignored", key);
        }
    }
}

static void configure(void *p, const rp_settings *s, const rp_host *h)
{
    static const char *const conf_keys[] = {"torch.alloc_conf", "env:PYTORCH_ALLOC_CONF",
                                            "env:PYTORCH_CUDA_ALLOC_CONF", NULL};
    static const char *const no_cache[] = {"env:PYTORCH_NO_CUDA_MEMORY_CACHING", NULL};
    static const char *const graphs[] = {"torch.private_pools", NULL};
    static const char *const memory[] = {"torch.device_memory", NULL};
    torch *m = p;
    const char *conf = rp_setting(s, conf_keys);
    if (conf)
        parse_conf(m, conf, h);
    if (rp_setting_bool(s, no_cache) == 1)
        rp_note(h, "PyTorch ran with PYTORCH_NO_CUDA_MEMORY_CACHING=1: every tensor is its own cudaMalloc, there is "
                "no cache to model");
    const char *g = rp_setting(s, graphs);
    if (g && strcmp(g, "0"))
        rp_note(h, "the run used CUDA-graph private pools (%s): blocks in them are served from pools the model does "
                "not keep apart, so its choices there are not followed", g);
    uint64_t dev = rp_setting_bytes(s, memory);
    if (dev)
        m->reservation = dev + dev / 8;
}

/* ---------------------------------------------------------- placement */

static int allocatable(const torch *m, uint32_t id)
{
    return id != RP_NIL && !m->bl.b[id].in_use;
}

/* A free block in an expandable segment counts the unmapped space after it. */
static uint64_t expandable_size(const torch *m, uint32_t id)
{
    const rp_block *b = &m->bl.b[id];
    return b->size + (b->next != RP_NIL && m->bl.b[b->next].unmapped ? m->bl.b[b->next].size : 0);
}

static uint32_t at_key(const torch *m, const rp_ordset *s, size_t i)
{
    (void)s;
    return rp_blocks_at(&m->bl, s->k[i].c);
}

/* get_free_block: the best fit, with the oversize rules. */
static uint32_t get_free_block(torch *m, int cls, uint64_t stream, uint64_t size, uint64_t hint)
{
    rp_ordset *pool = &m->pool[cls];
    size_t i = rp_ordset_lower(pool, (rp_key){stream, size, 0});
    if (i == pool->n || pool->k[i].a != stream)
        return RP_NIL;
    uint32_t id = at_key(m, pool, i);
    if (m->bl.b[id].expandable) {
        if (m->expandable) {
            while (i + 1 < pool->n && pool->k[i + 1].a == stream && m->bl.b[at_key(m, pool, i)].expandable &&
                   expandable_size(m, at_key(m, pool, i + 1)) < expandable_size(m, at_key(m, pool, i)))
                i++;
        } else {
            do
                i++;
            while (i < pool->n && m->bl.b[at_key(m, pool, i)].expandable && pool->k[i].a == stream);
            if (i == pool->n || pool->k[i].a != stream)
                return RP_NIL;
        }
        id = at_key(m, pool, i);
    }
    uint64_t have = m->bl.b[id].size;
    if (size < m->max_split && have >= m->max_split)
        return RP_NIL;
    if (size >= m->max_split && have >= size + m->max_non_split_rounding)
        return RP_NIL;
    /* Equal keys cannot happen (addresses differ); the hint only confirms. */
    (void)hint;
    from_pool(m, id);
    return id;
}

static int should_split(const torch *m, const rp_block *b, uint64_t size)
{
    uint64_t rest = b->size - size;
    if (b->cls == SMALL || m->expandable)
        return rest >= MIN_BLOCK;
    return size < m->max_split && rest > SMALL_SIZE;
}

/* An unmapped range of address space, merged with unmapped neighbours. */
static void to_holes(torch *m, uint32_t id)
{
    rp_block *b = &m->bl.b[id];
    b->unmapped = 1;
    b->in_use = 0;
    rp_ordset_insert(&m->unmapped[b->cls], hole_key(b));
}

static void from_holes(torch *m, uint32_t id)
{
    rp_block *b = &m->bl.b[id];
    rp_ordset_erase(&m->unmapped[b->cls], hole_key(b));
    b->unmapped = 0;
}

/* map_block: back the start of hole `id` with pages for size bytes; the
 * mapped part becomes a free block merged with free neighbours.  Returns
 * that block, or RP_NIL when the device refused. */
static uint32_t map_block(torch *m, uint32_t id, uint64_t size, const rp_host *h)
{
    rp_block *b = &m->bl.b[id];
    uint64_t page = segment_page[b->cls];
    uint64_t want = (size + page - 1) / page * page;
    if (want > b->size)
        want = b->size;
    uint64_t got_size = want;
    if (!h->segment(h->ctx, &got_size, b->ptr))
        return RP_NIL;
    from_holes(m, id);
    b = &m->bl.b[id];
    if (want < b->size) {
        uint32_t rest = rp_blocks_split(&m->bl, id, want);
        m->bl.b[rest].expandable = 1;
        to_holes(m, rest);
    }
    m->count.reserved += want;
    uint32_t prev = m->bl.b[id].prev, next = m->bl.b[id].next;
    if (prev != RP_NIL && !m->bl.b[prev].in_use && !m->bl.b[prev].unmapped) {
        from_pool(m, prev);
        rp_blocks_merge(&m->bl, prev, id);
        id = prev;
    }
    if (next != RP_NIL && !m->bl.b[next].in_use && !m->bl.b[next].unmapped) {
        from_pool(m, next);
        rp_blocks_merge(&m->bl, id, next);
    }
    to_pool(m, id);
    return id;
}

/* find_expandable_block + try_allocate_expandable_block. */
static uint32_t expandable_block(torch *m, int cls, uint64_t stream, uint64_t size, const rp_host *h)
{
    rp_ordset *holes = &m->unmapped[cls];
    uint32_t cand = RP_NIL;
    for (size_t i = rp_ordset_lower(holes, (rp_key){stream, 0, 0}); i < holes->n && holes->k[i].a == stream; i++) {
        uint32_t c = rp_blocks_at(&m->bl, holes->k[i].b);
        if (allocatable(m, m->bl.b[c].prev) && !m->bl.b[m->bl.b[c].prev].unmapped)
            c = m->bl.b[c].prev;
        uint64_t room = 0;
        for (uint32_t x = c; room < size && allocatable(m, x); x = m->bl.b[x].next)
            room += m->bl.b[x].size;
        if (room >= size) {
            cand = c;
            break;
        }
    }
    if (cand == RP_NIL) {
        /* A new reservation: where it lies, the log's first mapping says. */
        uint64_t page = segment_page[cls];
        uint64_t want = (size + page - 1) / page * page, got_size = want;
        uint64_t base = h->segment(h->ctx, &got_size, 0);
        if (!base)
            return RP_NIL;
        cand = rp_blocks_new(&m->bl, base, m->reservation, stream, (uint8_t)cls);
        m->bl.b[cand].expandable = 1;
        m->count.segments++;
        uint32_t rest = rp_blocks_split(&m->bl, cand, want);
        m->bl.b[rest].expandable = 1;
        to_holes(m, rest);
        m->count.reserved += want;
        to_pool(m, cand);
    } else if (m->bl.b[cand].unmapped) {
        uint64_t n = m->bl.b[cand].size < size ? m->bl.b[cand].size : size;
        if ((cand = map_block(m, cand, n, h)) == RP_NIL)
            return RP_NIL;
    }
    while (m->bl.b[cand].size < size) {
        uint32_t next = m->bl.b[cand].next;
        uint64_t rest = size - m->bl.b[cand].size;
        if (next == RP_NIL || !m->bl.b[next].unmapped)
            return RP_NIL;
        if ((cand = map_block(m, next, rest < m->bl.b[next].size ? rest : m->bl.b[next].size, h)) == RP_NIL)
            return RP_NIL;
    }
    from_pool(m, cand);
    return cand;
}

static int torch_alloc(void *p, uint64_t size, uint64_t stream, const rp_host *h, uint64_t *ptr, uint64_t *granted)
{
    torch *m = p;
    uint64_t need = round_size(m, size);
    int cls = need <= SMALL_SIZE ? SMALL : LARGE;
    uint32_t id = get_free_block(m, cls, stream, need, h->hint);
    /* alloc_block, and when the device refuses, again after
     * release_available_cached_blocks (only with max_split_size) and after
     * release_cached_blocks.  What those release the log shows (the
     * driver applies it); the model follows the attempts. */
    for (int attempt = m->max_split == UINT64_MAX; id == RP_NIL && attempt < 3; attempt++) {
        if (m->expandable) {
            id = expandable_block(m, cls, stream, need, h);
            continue;
        }
        uint64_t seg = allocation_size(need);
        int fatal;
        uint64_t base = rp_segment(h, seg, &fatal);
        if (fatal)
            break;  /* not out of memory: raised at once */
        if (!base)
            continue;
        id = rp_blocks_new(&m->bl, base, seg, stream, (uint8_t)cls);
        m->count.reserved += seg;
        m->count.segments++;
    }
    if (id == RP_NIL)
        return RP_NOMEM;
    if (should_split(m, &m->bl.b[id], need)) {
        uint32_t rest = rp_blocks_split(&m->bl, id, need);
        m->bl.b[rest].expandable = m->bl.b[id].expandable;
        to_pool(m, rest);
    }
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

/* unmap_block, as the log shows it: the whole pages [base, base + size)
 * of a free block go back; what is left either side stays free. */
static int unmap(torch *m, uint64_t base, uint64_t size)
{
    for (int cls = SMALL; cls <= LARGE; cls++) {
        rp_ordset *pool = &m->pool[cls];
        for (size_t i = 0; i < pool->n; i++) {
            uint32_t id = rp_blocks_at(&m->bl, pool->k[i].c);
            const rp_block *b = &m->bl.b[id];
            if (!b->expandable || base < b->ptr || base + size > b->ptr + b->size)
                continue;
            from_pool(m, id);
            if (base > m->bl.b[id].ptr) {
                uint32_t mid = rp_blocks_split(&m->bl, id, base - m->bl.b[id].ptr);
                m->bl.b[mid].expandable = 1;
                to_pool(m, id);
                id = mid;
            }
            if (size < m->bl.b[id].size) {
                uint32_t after = rp_blocks_split(&m->bl, id, size);
                m->bl.b[after].expandable = 1;
                to_pool(m, after);
            }
            m->count.reserved -= size;
            uint32_t prev = m->bl.b[id].prev, next = m->bl.b[id].next;
            if (prev != RP_NIL && m->bl.b[prev].unmapped) {
                from_holes(m, prev);
                rp_blocks_merge(&m->bl, prev, id);
                id = prev;
            }
            if (next != RP_NIL && m->bl.b[next].unmapped) {
                from_holes(m, next);
                rp_blocks_merge(&m->bl, id, next);
            }
            if (m->bl.b[id].prev == RP_NIL && m->bl.b[id].next == RP_NIL) {
                /* release_expandable_segment: nothing mapped is left */
                m->count.segments--;
                rp_blocks_delete(&m->bl, id);
            } else {
                to_holes(m, id);
            }
            return RP_OK;
        }
    }
    return RP_UNKNOWN;
}

static int torch_release(void *p, uint64_t base, uint64_t size, const rp_host *h)
{
    (void)h;  /* a release never breaks the model: at worst it diverged */
    torch *m = p;
    uint32_t id = rp_blocks_at(&m->bl, base);
    if (id != RP_NIL && !m->bl.b[id].expandable)
        return rp_blocks_release(&m->bl, base, &m->count, from_pool, m);
    return size ? unmap(m, base, size) : RP_UNKNOWN;
}

static int check_block(const rp_block *b, const rp_host *h)
{
    if (b->in_use && b->size < MIN_BLOCK)
        return rp_violate(h, "rounding", "block 0x%llx of %llu bytes is below the 512-byte minimum",
                          (unsigned long long)b->ptr, (unsigned long long)b->size);
    if (b->cls == SMALL && !b->expandable && b->size > SMALL_BUFFER)
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
    .name = "torch",
    .summary = "PyTorch caching allocator: small/large pools, best fit by (stream, size, address), its options",
    .create = create, .destroy = destroy, .copy = copy, .save = save, .load = load, .alloc = torch_alloc, .free = torch_free,
    .release = torch_release, .check = torch_check, .stats = torch_stats,
    .points = NULL, .point_names = NULL, .places = NULL, .configure = configure,
    .doc = "PyTorch's CUDA caching allocator (2.x, c10/cuda/CUDACachingAllocator.cpp): 512-byte rounding, small "
           "(<= 1 MiB, 2 MiB segments) and large pools, best fit by (stream, size, address), split and merge rules. "
           "Options from PYTORCH_ALLOC_CONF / PYTORCH_CUDA_ALLOC_CONF as the process saw them (the tracer records "
           "them; torch-snapshot-import writes the snapshot's allocator_settings): max_split_size_mb, "
           "max_non_split_rounding_mb, roundup_power2_divisions, expandable_segments.  Said in a note and not "
           "followed: garbage_collection_threshold (the releases the log shows are applied), CUDA-graph private "
           "pools, backend:cudaMallocAsync, PYTORCH_NO_CUDA_MEMORY_CACHING.",
};
