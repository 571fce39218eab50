/*
 * model_cupy_next.c - CuPy 14.1+'s pool (cupy/cuda/memory.pyx, _Arena).
 *
 * Per stream, an arena holds its free chunks in one ordered set of (size,
 * chunk); a request (rounded up to 512 bytes) takes the first chunk of at
 * least its size, splits it and puts the rest back without merging.  Frees
 * merge with the next then the previous free chunk.  The pool's lock is a
 * plain mutex and the collector stays on under it: a free that cannot take
 * the lock (a collection that started while the lock was held, on the same
 * thread) is staged on its arena's pending list, and the list is committed
 * when that arena next serves a request (get_chunk) or gives back its free
 * chunks (free_all).  Under the lock only a new arena (list, _Arena,
 * weakref) and free_all_blocks' tuple of arenas create GC-tracked objects;
 * _Chunk is not tracked.  The out-of-memory ladder (free_all_blocks,
 * retry, gc.collect() and free_all_blocks, retry; the same before a memory
 * limit would be exceeded) runs without the lock, so the collection's frees
 * there go straight in.  An arena lives while a chunk refers to it; a new
 * one is made when the stream has none.
 *
 * Which of several equal-sized chunks comes first depends on the chunks'
 * object addresses: the replay follows the log's choice.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blocks.h"
#include "rangeset.h" /* RP_NIL */
#include "state.h"
#include "xalloc.h"

#define UNIT 512ULL

typedef struct arena {
    uint64_t stream;
    rp_ordset set;             /* free chunks by (size, address) */
    uint64_t *pending;         /* frees staged while the lock was held */
    size_t npending, cappending;
    uint64_t chunks;           /* chunks referring to it: 0 = dead */
} arena;

typedef struct cnext {
    rp_blocks bl;
    arena *a;
    size_t na, capa;
    int locked;                /* inside h->reenter at a point under the lock */
    uint64_t limit;            /* total_bytes limit, 0 none */
    rp_model_counts count;
    rp_touched touched;
} cnext;

static const char *const points[] = {"_arena: new _Arena", "free_all_blocks: tuple(arenas)",
                                     "_try_malloc: gc.collect()", NULL};
enum { POINT_ARENA, POINT_FREE_ALL, POINT_COLLECT };

static const rp_place places[] = {
    {"singledevicememorypool__arena", RP_PLACE_POINT, "_arena:"},
    {"free_all_blocks", RP_PLACE_POINT, "free_all_blocks:"},
    {"try_malloc", RP_PLACE_POINT, "_try_malloc:"},
    {"singledevicememorypool__malloc", RP_PLACE_UNSURE, NULL},
    {"singledevicememorypool_malloc", RP_PLACE_OUTSIDE, NULL},
    {"singledevicememorypool_free", RP_PLACE_OUTSIDE, NULL},
    {"pooledmemory_free", RP_PLACE_OUTSIDE, NULL},
    {NULL, 0, NULL},
};

static arena *arena_find(cnext *m, uint64_t stream)
{
    for (size_t i = 0; i < m->na; i++)
        if (m->a[i].stream == stream)
            return &m->a[i];
    return NULL;
}

static arena *arena_add(cnext *m, uint64_t stream)
{
    size_t old = m->capa;
    rp_grow(&m->a, &m->capa, m->na + 1, sizeof *m->a);
    memset(m->a + old, 0, (m->capa - old) * sizeof *m->a);
    arena *a = &m->a[m->na++];
    a->stream = stream;
    a->set.n = 0;
    a->npending = 0;
    a->chunks = 0;
    return a;
}

/* The arena a block belongs to (its stream's; the chunk keeps it alive). */
static arena *arena_of_block(cnext *m, uint32_t id)
{
    arena *a = arena_find(m, m->bl.b[id].stream);
    return a ? a : arena_add(m, m->bl.b[id].stream);
}

static void to_set(cnext *m, uint32_t id)
{
    rp_block *b = &m->bl.b[id];
    rp_ordset_insert(&arena_of_block(m, id)->set, (rp_key){b->size, b->ptr, 0});
    b->in_set = 1;
    m->count.free_bytes += b->size;
    rp_touched_add(&m->touched, id);
}

static void from_set(void *p, uint32_t id)
{
    cnext *m = p;
    rp_block *b = &m->bl.b[id];
    rp_ordset_erase(&arena_of_block(m, id)->set, (rp_key){b->size, b->ptr, 0});
    b->in_set = 0;
    m->count.free_bytes -= b->size;
}

/* A chunk merged into its neighbour drops its arena reference. */
static void unlist_merged(void *p, uint32_t id)
{
    cnext *m = p;
    from_set(m, id);
    arena_of_block(m, id)->chunks--;
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
    for (size_t i = 0; i < m->capa; i++) {
        rp_ordset_free(&m->a[i].set);
        free(m->a[i].pending);
    }
    free(m->a);
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
        arena *da = &d->a[i];
        const arena *sa = &s->a[i];
        da->stream = sa->stream;
        da->chunks = sa->chunks;
        rp_ordset_copy(&da->set, &sa->set);
        rp_grow(&da->pending, &da->cappending, sa->npending, sizeof *da->pending);
        if (sa->npending)
            memcpy(da->pending, sa->pending, sa->npending * sizeof *da->pending);
        da->npending = sa->npending;
    }
    d->na = s->na;
    d->locked = s->locked;
    d->limit = s->limit;
    d->count = s->count;
    d->touched = s->touched;
}

static void save(const void *p, rp_state_w *w)
{
    const cnext *m = p;
    rp_state_put(w, m, sizeof *m);
    rp_blocks_save(&m->bl, w);
    rp_state_put(w, m->a, m->na * sizeof *m->a);
    for (size_t i = 0; i < m->na; i++) {
        rp_ordset_save(&m->a[i].set, w);
        rp_state_array(w, m->a[i].pending, m->a[i].npending, sizeof *m->a[i].pending);
    }
}

static int load(void *p, rp_state_r *r)
{
    cnext *m = p;   /* fresh from create: owns no buffer yet */
    rp_state_get(r, m, sizeof *m);
    rp_blocks_unhook(&m->bl);
    size_t na = m->na;
    m->a = NULL;
    m->na = m->capa = 0;
    rp_blocks_load(&m->bl, r);
    if (r->bad || na > (size_t)(r->end - r->p) / sizeof *m->a)
        return -1;
    m->a = rp_xmalloc((na ? na : 1) * sizeof *m->a);
    rp_state_get(r, m->a, na * sizeof *m->a);
    for (size_t i = 0; i < na; i++) {
        rp_ordset_unhook(&m->a[i].set);
        m->a[i].pending = NULL;
        m->a[i].npending = m->a[i].cappending = 0;
    }
    m->na = m->capa = na;
    for (size_t i = 0; i < na; i++) {
        rp_ordset_load(&m->a[i].set, r);
        m->a[i].pending = rp_state_get_array(r, &m->a[i].npending, sizeof *m->a[i].pending);
        m->a[i].cappending = m->a[i].npending;
    }
    return r->bad ? -1 : 0;
}

static void reenter(cnext *m, int point, int locked, const rp_host *h)
{
    int was = m->locked;
    m->locked = locked;
    h->reenter(h->ctx, points[point]);
    m->locked = was;
}

/* insert_chunk(chunk) with merging: the chunk is free from now on. */
static void do_free(cnext *m, uint32_t id)
{
    m->count.allocated -= m->bl.b[id].size;
    to_set(m, rp_blocks_coalesce(&m->bl, id, unlist_merged, m));
}

/* _commit_pending_free: the staged frees, newest first (list.pop()). */
static void commit_pending(cnext *m, arena *a)
{
    while (a->npending) {
        uint32_t id = rp_blocks_at(&m->bl, a->pending[--a->npending]);
        if (id != RP_NIL && m->bl.b[id].in_use)
            do_free(m, id);
    }
}

/* self._arena(ident), under the lock: a new arena is three GC-tracked
 * objects, where a collection can start with the lock held. */
static arena *get_arena(cnext *m, uint64_t stream, const rp_host *h)
{
    arena *a = arena_find(m, stream);
    if (a && a->chunks)
        return a;
    reenter(m, POINT_ARENA, 1, h);
    a = arena_find(m, stream);
    return a ? a : arena_add(m, stream);
}

/* arena.free_all(): commit, then give back every whole free chunk. */
static void free_all(cnext *m, arena *a, const rp_host *h)
{
    commit_pending(m, a);
    for (size_t i = 0; i < a->set.n;) {
        uint32_t id = rp_blocks_at(&m->bl, a->set.k[i].b);
        const rp_block *b = &m->bl.b[id];
        if (b->prev != RP_NIL || b->next != RP_NIL) {
            i++;
            continue;
        }
        uint64_t base = b->ptr, size = b->size;
        from_set(m, id);
        a->chunks--;
        m->count.reserved -= size;
        m->count.segments--;
        rp_blocks_delete(&m->bl, id);
        rp_released(h, base, size);
    }
}

/* free_all_blocks(None), under the lock: the tuple of arenas first. */
static void free_all_blocks(cnext *m, const rp_host *h)
{
    reenter(m, POINT_FREE_ALL, 1, h);
    for (size_t i = 0; i < m->na; i++)
        if (m->a[i].chunks)
            free_all(m, &m->a[i], h);
}

/* _try_malloc: the limit's ladder, then the device's; 0 when it gave up. */
static uint64_t try_malloc(cnext *m, uint64_t size, const rp_host *h)
{
    if (m->limit && m->count.reserved + size > m->limit) {
        free_all_blocks(m, h);
        if (m->count.reserved + size > m->limit) {
            reenter(m, POINT_COLLECT, 0, h);
            free_all_blocks(m, h);
        }
        if (m->count.reserved + size > m->limit)
            return 0;
    }
    /* Each retry only after CUDA said "out of memory". */
    int fatal;
    uint64_t base = rp_segment(h, size, &fatal);
    if (base || fatal)
        return base;
    free_all_blocks(m, h);
    if ((base = rp_segment(h, size, &fatal)) || fatal)
        return base;
    reenter(m, POINT_COLLECT, 0, h);
    free_all_blocks(m, h);
    return rp_segment(h, size, NULL);
}

static int next_alloc(void *p, uint64_t size, uint64_t stream, const rp_host *h, uint64_t *ptr, uint64_t *granted)
{
    cnext *m = p;
    uint64_t need = (size + UNIT - 1) / UNIT * UNIT;
    arena *a = get_arena(m, stream, h);
    commit_pending(m, a);
    size_t i = rp_ordset_lower(&a->set, (rp_key){need, 0, 0});
    uint32_t id;
    if (i < a->set.n) {
        /* Ties in size: the real pool's choice when the log has it. */
        uint32_t hint = h->hint ? rp_blocks_at(&m->bl, h->hint) : RP_NIL;
        if (hint != RP_NIL && m->bl.b[hint].in_set && m->bl.b[hint].stream == stream &&
            m->bl.b[hint].size == a->set.k[i].a)
            id = hint;
        else
            id = rp_blocks_at(&m->bl, a->set.k[i].b);
        from_set(m, id);
        if (m->bl.b[id].size > need) {
            /* insert_chunk(remaining, merge=False) */
            to_set(m, rp_blocks_split(&m->bl, id, need));
            arena_find(m, stream)->chunks++;
        }
    } else {
        uint64_t base = try_malloc(m, need, h);
        if (!base)
            return RP_NOMEM;
        id = rp_blocks_new(&m->bl, base, need, stream, 0);
        arena_of_block(m, id)->chunks++;
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
    (void)nested;  /* what matters is whether the lock is held */
    cnext *m = p;
    uint32_t id = rp_blocks_at(&m->bl, ptr);
    if (id == RP_NIL || !m->bl.b[id].in_use)
        return RP_UNKNOWN;
    if (m->locked) {
        /* try_lock failed: add_pending_free_atomic on the chunk's arena. */
        arena *a = arena_of_block(m, id);
        rp_grow(&a->pending, &a->cappending, a->npending + 1, sizeof *a->pending);
        a->pending[a->npending++] = ptr;
        return RP_OK;
    }
    do_free(m, id);
    return RP_OK;
}

/* The log shows a segment given back by free_all_blocks called from the
 * program (outside any operation): the arena commits its pending frees
 * first. */
static int next_release(void *p, uint64_t base, uint64_t size, const rp_host *h)
{
    (void)h;
    (void)size;
    cnext *m = p;
    uint32_t id = rp_blocks_at(&m->bl, base);
    if (id == RP_NIL)
        return RP_UNKNOWN;
    arena *a = arena_of_block(m, id);
    commit_pending(m, a);
    int rc = rp_blocks_release(&m->bl, base, &m->count, from_set, m);
    if (rc == RP_OK)
        a->chunks--;
    return rc;
}

static void configure(void *p, const rp_settings *s, const rp_host *h)
{
    static const char *const limit_keys[] = {"cupy.memory_limit", "env:CUPY_GPU_MEMORY_LIMIT", NULL};
    static const char *const version_keys[] = {"cupy.version", "cupy_version", NULL};
    cnext *m = p;
    const char *v = rp_setting(s, version_keys);
    int major, minor;
    if (v && sscanf(v, "%d.%d", &major, &minor) == 2 && (major < 14 || (major == 14 && minor < 1)))
        rp_note(h, "model cupy-next follows CuPy 14.1+; the log says CuPy %s (cupy: 5.4 to 14.0)", v);
    const char *limit = rp_setting(s, limit_keys);
    if (limit && strchr(limit, '%'))
        rp_note(h, "memory limit %s is a fraction of the device's memory, which the log does not record: the model "
                "does not follow it", limit);
    else if (limit)
        m->limit = rp_setting_bytes(s, limit_keys);
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
    .name = "cupy-next",
    .summary = "CuPy 14.1+: best fit over (size, chunk) per stream; frees under the held lock staged per arena",
    .create = create, .destroy = destroy, .copy = copy, .save = save, .load = load, .alloc = next_alloc, .free = next_free,
    .release = next_release, .check = next_check, .stats = next_stats,
    .points = NULL, .point_names = points, .places = places, .configure = configure,
    .doc = "CuPy 14.1 and later (cupy/cuda/memory.pyx, _Arena): per-stream ordered sets of free chunks, best fit, "
           "split without merging the rest, merge on free.  A free during a collection that started with the "
           "pool's lock held (a new arena, free_all_blocks' tuple) is staged on its arena and committed by that "
           "arena's next get_chunk or free_all; the out-of-memory ladder's collection runs without the lock and "
           "frees directly.  Ties between equal sizes follow the log.  Not followed: a free staged because "
           "another thread held the lock (the log cannot show it: counted as a divergence if it matters), a "
           "memory limit given as a fraction of device memory.",
};
