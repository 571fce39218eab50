/*
 * model_cupy.c - CuPy's SingleDeviceMemoryPool, 5.x to 14.0 (cupy/cuda/memory.pyx).
 *
 * Sizes round up to 512 bytes; bin index = (size - 1) // 512, one exact size
 * per bin.  Each stream has an arena: a list of Python sets of free chunks
 * ("slots"), a vector of bin indices (a_index, kept sorted so lower_bound
 * works) and a vector of non-empty flags (a_flag).  _get_chunk finds the
 * first flagged slot at or after lower_bound(bin), pops any chunk, compacts
 * the index when the scan skipped 512 slots, splits the chunk and appends
 * the remainder; free merges with next then prev, then appends.  When the
 * device refuses a segment, _try_malloc runs the out-of-memory ladder:
 * free_all_blocks (every arena compacted, whole free chunks given back, an
 * arena left empty deleted), retry, gc.collect() (and free_all_blocks again
 * from 5.3 on), retry.  CuPy 13 and 14.0 run the same ladder first when a
 * memory limit (CUPY_GPU_MEMORY_LIMIT, set_limit) would be exceeded; 7 to
 * 12 raise at once.
 *
 * Two models share this code.  "cupy" (5.4+) disables the garbage collector
 * under the pool lock, so nothing re-enters the bookkeeping; only the
 * ladder's gc.collect(), outside the lock, runs finalizers that free pooled
 * memory.  "cupy" (5.2/5.3) does not disable it: every GC-tracked object the
 * code creates under the lock is a point where a collection can run
 * finalizers that free pooled memory into the same arena (the seed-000
 * story):
 *   _arena               the new arena list, when a stream has none
 *   _compact_index       its new list and enumerate() (before the loop),
 *                        and keep_list = set() per slot when freeing
 *   free_all_blocks      list(self._free.iterkeys())
 *   _Chunk.split         _Chunk.__new__ of the remainder (the popped chunk
 *                        is in no free list meanwhile)
 *   _append_to_free_list set(), after computing the slot index and before
 *                        inserting at it
 * We reproduce the code's exact steps, std::lower_bound and Python's
 * enumerate over a list that changes under it included, so a corrupted
 * index misbehaves the same way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "trace_format.h" /* TF_POOL_OP_* */
#include "ptrmap.h"
#include "rangeset.h" /* RP_NIL */
#include "state.h"
#include "xalloc.h"

#define UNIT 512u
#define COMPACTION_THRESHOLD 512u /* _index_compaction_threshold */
#define MAX_TOUCHED 16

typedef struct chunk {
    uint64_t ptr, size, stream;
    uint32_t prev, next;    /* address neighbours inside one cudaMalloc */
    uint32_t fprev, fnext;  /* links inside the free set holding it */
    uint32_t set;           /* that set, RP_NIL when not in one */
    uint8_t in_use;
} chunk;

/* One Python set() of free chunks. */
typedef struct fset { uint32_t head, count; } fset;

/* One stream's arena: pool._free[stream] (the list of slots) and
 * pool._index / pool._flag[stream].  Arenas are kept in the order of the
 * dict that holds them (insertion order: free_all_blocks walks them so). */
typedef struct arena {
    uint64_t stream;
    uint64_t *index;        /* a_index: bin numbers */
    int8_t *flag;           /* a_flag */
    uint32_t *slot;         /* arena[i]: set id, RP_NIL for None */
    size_t len, cap;
} arena;

/* What free_all_blocks' compaction kept of one slot: keep_list, a new set
 * holding the split chunks of the slot's set as it was then. */
typedef struct kept { uint64_t bin; uint32_t first, n; } kept;

typedef struct cupy {
    int guarded;            /* 5.4+: no collection under the lock */
    int collect_then_free;  /* the ladder frees all again after gc.collect() (5.3+) */
    int limit_ladder;       /* 13+: the ladder runs before a limit is exceeded; 7-12 raise */
    uint64_t limit;         /* total_bytes limit, 0 none */
    chunk *c;
    size_t nc, capc;
    uint32_t cfree;         /* recycled chunk ids, linked through next */
    fset *s;
    size_t ns, caps;
    uint32_t sfree;         /* recycled set ids, linked through head */
    arena *a;
    size_t na, capa;        /* live arenas [0, na); capa slots keep buffers */
    rp_ptrmap by_ptr;       /* chunk start -> chunk id, every chunk */
    rp_model_counts count;
    uint64_t orphaned;      /* free chunks in sets no slot refers to */
    int warned_coalesced;
    /* free_all_blocks' compaction in progress: the keep lists so far. */
    kept *kl;
    size_t nkl, capkl;
    struct keptc { uint32_t id; uint64_t ptr, size; } *klc;  /* their chunks as they were */
    size_t nklc, capklc;
    /* What operations touched since the last check: (arena, position). */
    uint32_t touched[MAX_TOUCHED][2];
    int ntouched;
} cupy;

/* ---------------------------------------------------------------- storage */

static uint32_t chunk_new(cupy *m, uint64_t ptr, uint64_t size, uint64_t stream)
{
    uint32_t id;
    if (m->cfree != RP_NIL) {
        id = m->cfree;
        m->cfree = m->c[id].next;
    } else {
        rp_grow(&m->c, &m->capc, m->nc + 1, sizeof *m->c);
        id = (uint32_t)m->nc++;
    }
    m->c[id] = (chunk){ptr, size, stream, RP_NIL, RP_NIL, RP_NIL, RP_NIL, RP_NIL, 0};
    rp_ptrmap_put(&m->by_ptr, ptr, id);
    return id;
}

static void chunk_delete(cupy *m, uint32_t id)
{
    rp_ptrmap_del(&m->by_ptr, m->c[id].ptr, NULL);
    m->c[id].next = m->cfree;
    m->c[id].size = 0;
    m->c[id].set = RP_NIL;
    m->cfree = id;
}

static int chunk_live(const cupy *m, uint32_t id)
{
    uint64_t *v = rp_ptrmap_get(&m->by_ptr, m->c[id].ptr);
    return m->c[id].size && v && *v == id;
}

static uint32_t set_new(cupy *m)
{
    uint32_t id;
    if (m->sfree != RP_NIL) {
        id = m->sfree;
        m->sfree = m->s[id].head;
    } else {
        rp_grow(&m->s, &m->caps, m->ns + 1, sizeof *m->s);
        id = (uint32_t)m->ns++;
    }
    m->s[id] = (fset){RP_NIL, 0};
    return id;
}

static void set_drop(cupy *m, uint32_t id)
{
    m->s[id].head = m->sfree;
    m->sfree = id;
}

static void set_add(cupy *m, uint32_t s, uint32_t id)
{
    chunk *c = &m->c[id];
    c->set = s;
    c->fprev = RP_NIL;
    c->fnext = m->s[s].head;
    if (c->fnext != RP_NIL)
        m->c[c->fnext].fprev = id;
    m->s[s].head = id;
    m->s[s].count++;
    m->count.free_bytes += c->size;
}

static void set_remove(cupy *m, uint32_t id)
{
    chunk *c = &m->c[id];
    fset *s = &m->s[c->set];
    if (c->fprev != RP_NIL)
        m->c[c->fprev].fnext = c->fnext;
    else
        s->head = c->fnext;
    if (c->fnext != RP_NIL)
        m->c[c->fnext].fprev = c->fprev;
    s->count--;
    c->set = RP_NIL;
    m->count.free_bytes -= c->size;
}

/* set.pop(): CPython picks by hash-table position, which depends on object
 * addresses; the replay takes the real pool's pick when the log has it. */
static uint32_t set_pop(cupy *m, uint32_t s, uint64_t hint)
{
    uint64_t *v = hint ? rp_ptrmap_get(&m->by_ptr, hint) : NULL;
    uint32_t id = v && m->c[*v].set == s ? (uint32_t)*v : m->s[s].head;
    set_remove(m, id);
    return id;
}

/* Arena slots past na stay zeroed or keep a deleted arena's buffers, so
 * destroy can free every vector. */
static void grow_arenas(cupy *m, size_t need)
{
    size_t old = m->capa;
    rp_grow(&m->a, &m->capa, need, sizeof *m->a);
    if (m->capa > old)
        memset(m->a + old, 0, (m->capa - old) * sizeof *m->a);
}

static int arena_find(const cupy *m, uint64_t stream)
{
    for (size_t i = 0; i < m->na; i++)
        if (m->a[i].stream == stream)
            return (int)i;
    return -1;
}

/* The arena goes to the end of the dict, reusing a spare slot's buffers. */
static size_t arena_add(cupy *m, uint64_t stream)
{
    grow_arenas(m, m->na + 1);
    m->a[m->na].stream = stream;
    m->a[m->na].len = 0;
    return m->na++;
}

/* del pool._free[stream] (and its index and flags); the slot's buffers move
 * past na for reuse. */
static void arena_delete(cupy *m, size_t ai)
{
    arena gone = m->a[ai];
    memmove(m->a + ai, m->a + ai + 1, (m->na - ai - 1) * sizeof *m->a);
    gone.len = 0;
    m->a[--m->na] = gone;
    m->ntouched = MAX_TOUCHED + 1;  /* positions moved: audit next time */
}

static void arena_reserve(arena *a, size_t need)
{
    if (need <= a->cap)
        return;
    size_t cap = a->cap ? a->cap * 2 : 16;
    while (cap < need)
        cap *= 2;
    a->index = rp_xrealloc(a->index, cap * sizeof *a->index);
    a->flag = rp_xrealloc(a->flag, cap * sizeof *a->flag);
    a->slot = rp_xrealloc(a->slot, cap * sizeof *a->slot);
    a->cap = cap;
}

static void touch(cupy *m, size_t ai, size_t pos)
{
    if (m->ntouched < MAX_TOUCHED) {
        m->touched[m->ntouched][0] = (uint32_t)ai;
        m->touched[m->ntouched][1] = (uint32_t)pos;
    }
    m->ntouched++;  /* past MAX_TOUCHED the next check audits the arenas */
}

/* -------------------------------------------------------- the pool's code */

static uint64_t bin_of(uint64_t size) { return (size - 1) / UNIT; }

/* std::lower_bound, step for step: on an unsorted vector it must land
 * where the real one lands. */
static size_t lower_bound(const uint64_t *v, size_t len, uint64_t key)
{
    size_t first = 0, count = len;
    while (count > 0) {
        size_t step = count / 2, it = first + step;
        if (v[it] < key) {
            first = it + 1;
            count -= step + 1;
        } else {
            count = step;
        }
    }
    return first;
}

/* Where 5.2/5.3 create a GC-tracked object under the lock, and the
 * ladder's gc.collect() (no lock held) of every version. */
static const char *const points[] = {
    "_Chunk.split: _Chunk.__new__", "_append_to_free_list: set()", "_arena: new arena list",
    "_compact_index: new list, enumerate()", "_compact_index: keep_list = set()",
    "free_all_blocks: list(arenas)", "_try_malloc: gc.collect()", NULL,
};
enum { POINT_SPLIT, POINT_SET, POINT_ARENA, POINT_COMPACT, POINT_KEEP, POINT_FREE_ALL, POINT_COLLECT };

/* The functions a collection's stack can show, innermost decides.  Cython
 * names end in the function's name; the fixture (tests/fixtures/cupy5_pool)
 * uses the same names in C.  Functions that call these and create objects
 * of their own outside the lock are "outside"; _get_chunk and free create
 * none, so a frame of theirs above the allocator means an inlined callee. */
static const rp_place places[] = {
    {"chunk_split", RP_PLACE_POINT, "_Chunk.split: _Chunk.__new__"},
    {"append_to_free_list", RP_PLACE_POINT, "_append_to_free_list: set()"},
    {"pool_arena", RP_PLACE_POINT, "_arena: new arena list"},
    {"singledevicememorypool__arena", RP_PLACE_POINT, "_arena: new arena list"},
    {"compact_index", RP_PLACE_POINT, "_compact_index:"},
    {"free_all_blocks", RP_PLACE_POINT, "free_all_blocks: list(arenas)"},
    {"try_malloc", RP_PLACE_POINT, "_try_malloc: gc.collect()"},
    {"get_chunk", RP_PLACE_UNSURE, NULL},
    {"remove_from_free_list", RP_PLACE_UNSURE, NULL},
    {"pool_free_chunk", RP_PLACE_UNSURE, NULL},
    {"singledevicememorypool_free", RP_PLACE_UNSURE, NULL},
    {"singledevicememorypool__malloc", RP_PLACE_UNSURE, NULL},
    {"singledevicememorypool_malloc", RP_PLACE_OUTSIDE, NULL},
    {"pooledmemory_free", RP_PLACE_OUTSIDE, NULL},
    {"pool_malloc", RP_PLACE_OUTSIDE, NULL},
    {"pool_free", RP_PLACE_OUTSIDE, NULL},
    {"hook_call", RP_PLACE_OUTSIDE, NULL},
    {NULL, 0, NULL},
};

static void creating_object(cupy *m, int point, const rp_host *h)
{
    if (!m->guarded)
        h->reenter(h->ctx, points[point]);
}

/* The arena a stream's chunks go to, created (a collection can run there)
 * when the stream has none.  Returns its position, or -1 after a
 * violation: the arena a re-entrant free created meanwhile was overwritten
 * by the new empty list (pool._free[stream] = ret = [] ran after it). */
static int arena_get(cupy *m, uint64_t stream, const rp_host *h)
{
    int ai = arena_find(m, stream);
    if (ai >= 0)
        return ai;
    creating_object(m, POINT_ARENA, h);
    ai = arena_find(m, stream);
    if (ai >= 0 && m->a[ai].len)
        return rp_violate(h, "reachable",
                          "the arena of stream 0x%llx that a re-entrant free created inside _arena was replaced by a "
                          "new empty list: its %zu bins stay in a_index with no slot (IndexError at the next look-up)",
                          (unsigned long long)stream, m->a[ai].len), -1;
    return ai >= 0 ? ai : (int)arena_add(m, stream);
}

static void give_back(cupy *m, uint32_t id, const rp_host *h);

/* arena[index] = set() replaced a free list a re-entrant free had just put
 * there: that set's last reference goes.  A chunk in it that has a neighbour
 * stays alive through the neighbour's prev/next, lost to the pool (reported
 * as unreachable); a whole-segment chunk has no other reference and dies with
 * the set, and its Memory with it: the segment goes back to the device (the
 * log shows that release inside this operation), which is no damage. */
static void drop_overwritten_set(cupy *m, uint32_t s, const rp_host *h)
{
    for (uint32_t id = m->s[s].head, next; id != RP_NIL; id = next) {
        next = m->c[id].fnext;
        if (m->c[id].prev == RP_NIL && m->c[id].next == RP_NIL) {
            set_remove(m, id);
            give_back(m, id, h);
        }
    }
    if (m->s[s].count)
        m->orphaned += m->s[s].count;
    else
        set_drop(m, s);
}

static int append_to_free_list(cupy *m, size_t ai, uint32_t id, const rp_host *h)
{
    uint64_t bin = bin_of(m->c[id].size);
    arena *a = &m->a[ai];
    uint64_t stream = a->stream;
    size_t index = lower_bound(a->index, a->len, bin);
    uint32_t s;
    if (index < a->len && a->index[index] == bin && a->slot[index] != RP_NIL) {
        s = a->slot[index];
    } else if (index < a->len && a->index[index] == bin) {
        /* arena[index] = free_list = set(): the index was computed first */
        creating_object(m, POINT_SET, h);
        int again = arena_find(m, stream);
        if (again < 0)
            return rp_violate(h, "reachable", "the arena of stream 0x%llx was deleted under _append_to_free_list",
                              (unsigned long long)stream);
        ai = (size_t)again;
        a = &m->a[ai];
        if (index >= a->len)
            return rp_violate(h, "index_range", "slot %zu no longer exists after re-entry (arena has %zu)",
                              index, a->len);
        if (a->slot[index] != RP_NIL)
            drop_overwritten_set(m, a->slot[index], h);
        s = set_new(m);
        a->slot[index] = s;
    } else {
        /* free_list = set(); then insert at the index computed before it */
        creating_object(m, POINT_SET, h);
        int again = arena_find(m, stream);
        if (again < 0)
            return rp_violate(h, "reachable", "the arena of stream 0x%llx was deleted under _append_to_free_list",
                              (unsigned long long)stream);
        ai = (size_t)again;
        a = &m->a[ai];
        if (index > a->len)
            return rp_violate(h, "index_range", "insert position %zu past the end (%zu) after re-entry", index,
                              a->len);
        s = set_new(m);
        arena_reserve(a, a->len + 1);
        size_t tail = a->len - index;
        memmove(a->index + index + 1, a->index + index, tail * sizeof *a->index);
        memmove(a->flag + index + 1, a->flag + index, tail * sizeof *a->flag);
        memmove(a->slot + index + 1, a->slot + index, tail * sizeof *a->slot);
        a->index[index] = bin;
        a->flag[index] = 0;
        a->slot[index] = s;
        a->len++;
    }
    set_add(m, s, id);
    a->flag[index] = 1;
    touch(m, ai, index);
    return RP_OK;
}

/* 1 when the chunk was in the free list its bin points at, and is now out. */
static int remove_from_free_list(cupy *m, size_t ai, uint32_t id)
{
    arena *a = &m->a[ai];
    uint64_t bin = bin_of(m->c[id].size);
    size_t index = lower_bound(a->index, a->len, bin);
    if (index >= a->len || a->index[index] != bin || !a->flag[index])
        return 0;
    uint32_t s = a->slot[index];
    if (s == RP_NIL || m->c[id].set != s)
        return 0;
    set_remove(m, id);
    if (m->s[s].count == 0) {
        set_drop(m, s);
        a->slot[index] = RP_NIL;
        a->flag[index] = 0;
    }
    touch(m, ai, index);
    return 1;
}

/* A whole free chunk goes back to the device (its Memory dies with it). */
static void give_back(cupy *m, uint32_t id, const rp_host *h)
{
    chunk *c = &m->c[id];
    m->count.reserved -= c->size;
    m->count.segments--;
    rp_released(h, c->ptr, c->size);
    chunk_delete(m, id);
}

/* _compact_index(stream, free=False), after the scan in _get_chunk: keep
 * the slots holding chunks, in order, all flagged.  A sorted index stays
 * sorted. */
static int compact_index(cupy *m, size_t ai, const rp_host *h)
{
    uint64_t stream = m->a[ai].stream;
    creating_object(m, POINT_COMPACT, h);
    int again = arena_find(m, stream);
    if (again < 0)
        return RP_OK;  /* `if stream not in pool._free: return` */
    arena *a = &m->a[again];
    size_t j = 0;
    for (size_t i = 0; i < a->len; i++) {
        if (a->slot[i] != RP_NIL && !m->s[a->slot[i]].count)
            set_drop(m, a->slot[i]);
        if (a->slot[i] == RP_NIL || !m->s[a->slot[i]].count)
            continue;
        a->index[j] = a->index[i];
        a->flag[j] = 1;
        a->slot[j] = a->slot[i];
        j++;
    }
    a->len = j;
    m->ntouched = MAX_TOUCHED + 1;  /* positions moved: audit the order */
    return RP_OK;
}

static void keep_chunk(cupy *m, uint32_t id)
{
    rp_grow(&m->klc, &m->capklc, m->nklc + 1, sizeof *m->klc);
    m->klc[m->nklc++] = (struct keptc){id, m->c[id].ptr, m->c[id].size};
}

/* _compact_index(stream, free=True), from free_all_blocks: per slot, in the
 * list's order as it changes under the loop (Python's enumerate), a new
 * keep_list of the split chunks; whole chunks are dropped, and with them
 * their segments.  At the end the kept lists replace the arena, or the
 * arena is deleted when nothing was kept. */
static int compact_free(cupy *m, uint64_t stream, const rp_host *h)
{
    creating_object(m, POINT_COMPACT, h);
    if (arena_find(m, stream) < 0)
        return RP_OK;
    m->nkl = m->nklc = 0;
    for (size_t i = 0;; i++) {
        int ai = arena_find(m, stream);
        if (ai < 0 || i >= m->a[ai].len)
            break;
        uint32_t s = m->a[ai].slot[i];
        if (s == RP_NIL || !m->s[s].count)
            continue;  /* `if not free_list` */
        creating_object(m, POINT_KEEP, h);
        ai = arena_find(m, stream);
        if (ai < 0)
            break;
        if (i >= m->a[ai].len || m->a[ai].slot[i] == RP_NIL)
            continue;
        s = m->a[ai].slot[i];
        uint32_t first = (uint32_t)m->nklc;
        for (uint32_t id = m->s[s].head; id != RP_NIL; id = m->c[id].fnext)
            if (m->c[id].prev != RP_NIL || m->c[id].next != RP_NIL)
                keep_chunk(m, id);
        if (m->nklc == first)
            continue;  /* `if len(keep_list) == 0: continue` */
        rp_grow(&m->kl, &m->capkl, m->nkl + 1, sizeof *m->kl);
        m->kl[m->nkl++] = (kept){m->a[ai].index[i], first, (uint32_t)m->nklc - first};
    }
    int ai = arena_find(m, stream);
    if (ai < 0)
        return RP_OK;
    arena *a = &m->a[ai];
    /* `arena[:] = new_arena`: every old set goes; a whole chunk in one goes
     * back to the device, a split chunk in one no keep_list took is lost. */
    uint32_t lost = 0;
    for (size_t i = 0; i < a->len; i++) {
        uint32_t s = a->slot[i];
        if (s == RP_NIL)
            continue;
        for (uint32_t id = m->s[s].head, next; id != RP_NIL; id = next) {
            next = m->c[id].fnext;
            set_remove(m, id);
            if (m->c[id].prev == RP_NIL && m->c[id].next == RP_NIL)
                give_back(m, id, h);
            else
                m->c[id].set = RP_NIL;  /* kept below, or lost */
        }
        set_drop(m, s);
    }
    a->len = 0;
    for (size_t k = 0; k < m->nkl; k++) {
        arena_reserve(a, a->len + 1);
        uint32_t s = set_new(m);
        for (uint32_t j = m->kl[k].first; j < m->kl[k].first + m->kl[k].n; j++) {
            const struct keptc *kc = &m->klc[j];
            uint32_t id = kc->id;
            if (!chunk_live(m, id) || m->c[id].ptr != kc->ptr || m->c[id].in_use)
                return rp_violate(h, "reachable",
                                  "free_all_blocks kept chunk 0x%llx in a keep_list, but a re-entrant free merged it "
                                  "into its neighbour meanwhile: the free list names memory another chunk holds",
                                  (unsigned long long)kc->ptr);
            if (m->c[id].set != RP_NIL)
                return rp_violate(h, "reachable",
                                  "free_all_blocks kept chunk 0x%llx in two keep_lists (a re-entrant free moved it to "
                                  "a slot enumerate() reached again): it can be handed out twice",
                                  (unsigned long long)kc->ptr);
            if (m->c[id].size != kc->size)
                return rp_violate(h, "bin_membership",
                                  "free_all_blocks kept chunk 0x%llx in the keep_list of bin %llu, but a re-entrant "
                                  "free grew it to %llu bytes meanwhile", (unsigned long long)kc->ptr,
                                  (unsigned long long)m->kl[k].bin, (unsigned long long)m->c[id].size);
            set_add(m, s, id);
        }
        a->index[a->len] = m->kl[k].bin;
        a->flag[a->len] = 1;
        a->slot[a->len++] = s;
    }
    for (size_t id = 0; id < m->nc; id++)
        if (chunk_live(m, (uint32_t)id) && m->c[id].stream == stream && !m->c[id].in_use && m->c[id].set == RP_NIL)
            lost++;
    m->orphaned += lost;
    if (!a->len)
        arena_delete(m, (size_t)ai);
    m->ntouched = MAX_TOUCHED + 1;
    return RP_OK;
}

/* free_all_blocks(): every arena, in the dict's order. */
static int free_all_blocks(cupy *m, const rp_host *h)
{
    creating_object(m, POINT_FREE_ALL, h);
    size_t n = m->na;
    uint64_t *streams = rp_xmalloc((n ? n : 1) * sizeof *streams);
    for (size_t i = 0; i < n; i++)
        streams[i] = m->a[i].stream;
    int rc = RP_OK;
    for (size_t i = 0; i < n && !rc; i++)
        rc = compact_free(m, streams[i], h);
    free(streams);
    return rc;
}

static void merge(cupy *m, uint32_t left, uint32_t right)
{
    chunk *l = &m->c[left], *r = &m->c[right];
    l->size += r->size;
    l->next = r->next;
    if (r->next != RP_NIL)
        m->c[r->next].prev = left;
    chunk_delete(m, right);
}

/* Split off everything past size as a new chunk; returns it or RP_NIL.
 * `remaining = _Chunk.__new__(_Chunk)` comes first: a collection there runs
 * while the popped chunk is in no free list and not yet cut. */
static uint32_t split(cupy *m, uint32_t id, uint64_t size, const rp_host *h)
{
    if (m->c[id].size == size)
        return RP_NIL;
    creating_object(m, POINT_SPLIT, h);
    chunk c = m->c[id];
    uint32_t rest = chunk_new(m, c.ptr + size, c.size - size, c.stream);
    chunk *x = &m->c[id];
    x->size = size;
    m->c[rest].next = x->next;
    if (x->next != RP_NIL)
        m->c[x->next].prev = rest;
    x->next = rest;
    m->c[rest].prev = id;
    return rest;
}

static int get_chunk(cupy *m, uint64_t stream, uint64_t size, const rp_host *h, uint32_t *out)
{
    *out = RP_NIL;
    int ai = arena_get(m, stream, h);
    if (ai < 0)
        return RP_BROKEN;
    arena *a = &m->a[ai];
    size_t index = lower_bound(a->index, a->len, bin_of(size));
    for (size_t i = index; i < a->len; i++) {
        if (!a->flag[i])
            continue;
        uint32_t s = a->slot[i];
        if (s == RP_NIL || !m->s[s].count)
            return rp_violate(h, "flag_consistent", "slot %zu (bin %llu) is flagged non-empty but holds no chunk", i,
                              (unsigned long long)a->index[i]);
        uint32_t id = set_pop(m, s, h->hint);
        if (!m->s[s].count) {
            set_drop(m, s);
            a->flag[i] = 0;
            a->slot[i] = RP_NIL;
        }
        touch(m, (size_t)ai, i);
        if (i - index >= COMPACTION_THRESHOLD && compact_index(m, (size_t)ai, h))
            return RP_BROKEN;
        if (m->c[id].size < size)
            return rp_violate(h, "split_size",
                              "_Chunk.split: chunk of %llu bytes at 0x%llx popped from slot %zu for a request of %llu "
                              "bytes (assert self.size >= size); the bin index is out of order",
                              (unsigned long long)m->c[id].size, (unsigned long long)m->c[id].ptr, i,
                              (unsigned long long)size);
        uint32_t rest = split(m, id, size, h);
        *out = id;
        if (rest == RP_NIL)
            return RP_OK;
        /* _append_to_free_list(arena, ...) with the arena fetched above. */
        ai = arena_find(m, stream);
        if (ai < 0)
            return rp_violate(h, "reachable", "the arena of stream 0x%llx was deleted under _get_chunk",
                              (unsigned long long)stream);
        return append_to_free_list(m, (size_t)ai, rest, h);
    }
    return RP_OK;
}

/* _try_malloc's out-of-memory ladder around the device: 0 when it gave up
 * (rc says whether a violation stopped it). */
static uint64_t try_malloc(cupy *m, uint64_t size, const rp_host *h, int *rc)
{
    *rc = RP_OK;
    if (m->limit && m->count.reserved + size > m->limit) {
        if (!m->limit_ladder)
            return 0;  /* 7 to 12: OutOfMemoryError at once */
        if ((*rc = free_all_blocks(m, h)))
            return 0;
        if (m->count.reserved + size > m->limit) {
            h->reenter(h->ctx, points[POINT_COLLECT]);
            if ((*rc = free_all_blocks(m, h)))
                return 0;
        }
        if (m->count.reserved + size > m->limit)
            return 0;
    }
    /* Each retry only after CUDA said "out of memory"; any other error
     * is raised at once. */
    int fatal;
    uint64_t base = rp_segment(h, size, &fatal);
    if (base || fatal)
        return base;
    if ((*rc = free_all_blocks(m, h)))
        return 0;
    if ((base = rp_segment(h, size, &fatal)) || fatal)
        return base;
    h->reenter(h->ctx, points[POINT_COLLECT]);
    if (m->collect_then_free && (*rc = free_all_blocks(m, h)))
        return 0;
    return rp_segment(h, size, NULL);
}

/* ------------------------------------------------------------- interface */

static void *create_model(int guarded)
{
    cupy *m = rp_xcalloc(1, sizeof *m);
    m->guarded = guarded;
    m->collect_then_free = 1;
    m->limit_ladder = 1;
    m->cfree = m->sfree = RP_NIL;
    rp_ptrmap_init(&m->by_ptr);
    return m;
}

static void *create_cupy(void) { return create_model(1); }
static void *create_cupy5(void) { return create_model(0); }

static void destroy(void *p)
{
    cupy *m = p;
    for (size_t i = 0; i < m->capa && m->a; i++) {
        free(m->a[i].index);
        free(m->a[i].flag);
        free(m->a[i].slot);
    }
    free(m->a);
    free(m->c);
    free(m->s);
    free(m->kl);
    free(m->klc);
    rp_ptrmap_free(&m->by_ptr);
    free(m);
}

static void copy_array(void *dstp, size_t *dcap, const void *src, size_t n, size_t size)
{
    rp_grow(dstp, dcap, n, size);
    if (n)
        memcpy(*(void **)dstp, src, n * size);
}

static void copy(void *dp, const void *sp)
{
    cupy *d = dp;
    const cupy *s = sp;
    /* Arena vectors are owned per arena: keep d's, then copy contents. */
    grow_arenas(d, s->na);
    for (size_t i = 0; i < s->na; i++) {
        arena *da = &d->a[i];
        const arena *sa = &s->a[i];
        arena_reserve(da, sa->len);
        if (sa->len) {
            memcpy(da->index, sa->index, sa->len * sizeof *da->index);
            memcpy(da->flag, sa->flag, sa->len * sizeof *da->flag);
            memcpy(da->slot, sa->slot, sa->len * sizeof *da->slot);
        }
        da->len = sa->len;
        da->stream = sa->stream;
    }
    copy_array(&d->c, &d->capc, s->c, s->nc, sizeof *d->c);
    copy_array(&d->s, &d->caps, s->s, s->ns, sizeof *d->s);
    rp_ptrmap_copy(&d->by_ptr, &s->by_ptr);
    d->guarded = s->guarded;
    d->collect_then_free = s->collect_then_free;
    d->limit_ladder = s->limit_ladder;
    d->limit = s->limit;
    d->nc = s->nc;
    d->cfree = s->cfree;
    d->ns = s->ns;
    d->sfree = s->sfree;
    d->na = s->na;
    d->count = s->count;
    d->orphaned = s->orphaned;
    d->warned_coalesced = s->warned_coalesced;
    memcpy(d->touched, s->touched, sizeof d->touched);
    d->ntouched = s->ntouched;
}

/* The struct as it is, then what its pointers hold (state.h).  The keep
 * lists of a compaction in progress go too, though a checkpoint is taken
 * between operations, when there is none. */
static void save(const void *p, rp_state_w *w)
{
    const cupy *m = p;
    rp_state_put(w, m, sizeof *m);
    rp_state_put(w, m->a, m->na * sizeof *m->a);
    for (size_t i = 0; i < m->na; i++) {
        const arena *a = &m->a[i];
        rp_state_put(w, a->index, a->len * sizeof *a->index);
        rp_state_put(w, a->flag, a->len * sizeof *a->flag);
        rp_state_put(w, a->slot, a->len * sizeof *a->slot);
    }
    rp_state_put(w, m->c, m->nc * sizeof *m->c);
    rp_state_put(w, m->s, m->ns * sizeof *m->s);
    rp_state_ptrmap(w, &m->by_ptr);
    rp_state_put(w, m->kl, m->nkl * sizeof *m->kl);
    rp_state_put(w, m->klc, m->nklc * sizeof *m->klc);
}

/* n items of size into a new buffer; cap := n. */
static void *load_items(rp_state_r *r, size_t n, size_t size, size_t *cap)
{
    *cap = 0;
    if (r->bad || !n)
        return NULL;
    if (n > (size_t)(r->end - r->p) / size) {
        r->bad = 1;
        return NULL;
    }
    void *b = rp_xmalloc(n * size);
    rp_state_get(r, b, n * size);
    *cap = n;
    return b;
}

static int load(void *p, rp_state_r *r)
{
    cupy *m = p;
    rp_ptrmap_free(&m->by_ptr);
    rp_state_get(r, m, sizeof *m);
    /* Every pointer is garbage until loaded: clear them first, so that a
     * short read leaves a model destroy can take. */
    m->a = NULL;
    m->c = NULL;
    m->s = NULL;
    m->kl = NULL;
    m->klc = NULL;
    m->capa = m->capc = m->caps = m->capkl = m->capklc = 0;
    rp_ptrmap_init(&m->by_ptr);
    size_t na = m->na, nc = m->nc, ns = m->ns, nkl = m->nkl, nklc = m->nklc;
    m->na = m->nc = m->ns = m->nkl = m->nklc = 0;
    if (r->bad)
        return -1;
    m->a = load_items(r, na, sizeof *m->a, &m->capa);
    for (size_t i = 0; i < m->capa; i++) {
        m->a[i].index = NULL;
        m->a[i].flag = NULL;
        m->a[i].slot = NULL;
        m->a[i].cap = 0;
    }
    for (size_t i = 0; i < m->capa; i++) {
        arena *a = &m->a[i];
        size_t len = a->len, cap;
        a->len = 0;
        a->index = load_items(r, len, sizeof *a->index, &cap);
        a->flag = load_items(r, len, sizeof *a->flag, &cap);
        a->slot = load_items(r, len, sizeof *a->slot, &cap);
        if (!r->bad)
            a->len = a->cap = len;
    }
    m->c = load_items(r, nc, sizeof *m->c, &m->capc);
    m->s = load_items(r, ns, sizeof *m->s, &m->caps);
    rp_state_get_ptrmap(r, &m->by_ptr);
    m->kl = load_items(r, nkl, sizeof *m->kl, &m->capkl);
    m->klc = load_items(r, nklc, sizeof *m->klc, &m->capklc);
    if (r->bad)
        return -1;
    m->na = na;
    m->nc = nc;
    m->ns = ns;
    m->nkl = nkl;
    m->nklc = nklc;
    return 0;
}

/* CuPy's version (the tracer's INFO "cupy_version"): major, minor. */
static int version_of(const rp_settings *s, int *major, int *minor)
{
    static const char *const keys[] = {"cupy.version", "cupy_version", NULL};
    const char *v = rp_setting(s, keys);
    return v && sscanf(v, "%d.%d", major, minor) == 2;
}

static void configure_cupy(void *p, const rp_settings *s, const rp_host *h)
{
    static const char *const limit_keys[] = {"cupy.memory_limit", "env:CUPY_GPU_MEMORY_LIMIT", NULL};
    cupy *m = p;
    int major = 0, minor = 0, known = version_of(s, &major, &minor);
    if (known && (major < 5 || major > 14 || (major == 14 && minor >= 1)))
        rp_note(h, "model cupy follows CuPy 5.4 to 14.0; the log says CuPy %d.%d (cupy5: 5.2/5.3, cupy-next: 14.1+)",
                major, minor);
    const char *limit = rp_setting(s, limit_keys);
    if (!limit)
        return;
    if (known && major < 7) {
        rp_note(h, "memory limit %s: CuPy %d.%d has none; ignored", limit, major, minor);
        return;
    }
    if (strchr(limit, '%')) {
        rp_note(h, "memory limit %s is a fraction of the device's memory, which the log does not record: the model "
                "does not follow it (releases it causes are applied as the log shows them)", limit);
        return;
    }
    m->limit = rp_setting_bytes(s, limit_keys);
    m->limit_ladder = !known || major >= 13;
    if (!known)
        rp_note(h, "memory limit %llu bytes and no CuPy version in the log: the model runs CuPy 13+'s ladder before "
                "the limit is exceeded", (unsigned long long)m->limit);
}

static void configure_cupy5(void *p, const rp_settings *s, const rp_host *h)
{
    cupy *m = p;
    int major = 0, minor = 0;
    if (!version_of(s, &major, &minor))
        return;
    if (major != 5 || minor > 3)
        rp_note(h, "model cupy5 follows CuPy 5.2/5.3; the log says CuPy %d.%d (cupy: 5.4 to 14.0, cupy-next: 14.1+)",
                major, minor);
    m->collect_then_free = !(major == 5 && minor <= 2);
}

static int cupy_alloc(void *p, uint64_t size, uint64_t stream, const rp_host *h, uint64_t *ptr, uint64_t *granted)
{
    cupy *m = p;
    uint64_t rounded = (size + UNIT - 1) / UNIT * UNIT;
    uint32_t id;
    int rc = get_chunk(m, stream, rounded, h, &id);
    if (rc)
        return rc;
    if (id == RP_NIL) {
        /* No free chunk: the pool cudaMallocs exactly the rounded size. */
        uint64_t base = try_malloc(m, rounded, h, &rc);
        if (rc)
            return rc;
        if (!base)
            return RP_NOMEM;
        id = chunk_new(m, base, rounded, stream);
        m->count.reserved += rounded;
        m->count.segments++;
    }
    m->c[id].in_use = 1;
    m->count.allocated += m->c[id].size;
    *ptr = m->c[id].ptr;
    *granted = m->c[id].size;
    return RP_OK;
}

static int cupy_free(void *p, uint64_t ptr, int nested, const rp_host *h)
{
    (void)nested;  /* re-entry is the point, not a different path */
    cupy *m = p;
    uint64_t *v = rp_ptrmap_get(&m->by_ptr, ptr);
    if (!v || !m->c[*v].in_use)
        return RP_UNKNOWN;
    uint32_t id = (uint32_t)*v;
    m->c[id].in_use = 0;
    m->count.allocated -= m->c[id].size;
    uint64_t stream = m->c[id].stream;
    int got = arena_get(m, stream, h);
    if (got < 0)
        return RP_BROKEN;
    size_t ai = (size_t)got;
    uint32_t n = m->c[id].next;
    if (n != RP_NIL && remove_from_free_list(m, ai, n))
        merge(m, id, n);
    uint32_t pr = m->c[id].prev;
    if (pr != RP_NIL && remove_from_free_list(m, ai, pr)) {
        merge(m, pr, id);
        id = pr;
    }
    return append_to_free_list(m, ai, id, h);
}

/* The log shows a segment given back outside the model's own ladder
 * (free_all_blocks called by the program): only a whole, free allocation
 * goes back.  free_all_blocks compacts its arena and deletes it when
 * nothing split is left in it. */
static int cupy_release(void *p, uint64_t base, uint64_t size, const rp_host *h)
{
    (void)size;  /* a CuPy segment is one allocation */
    (void)h;     /* a release never breaks the model: at worst it diverged */
    cupy *m = p;
    uint64_t *v = rp_ptrmap_get(&m->by_ptr, base);
    if (!v)
        return RP_UNKNOWN;
    uint32_t id = (uint32_t)*v;
    chunk *c = &m->c[id];
    if (c->prev != RP_NIL || c->next != RP_NIL || c->set == RP_NIL)
        return RP_UNKNOWN;  /* still in use here: the model diverged; the
                             * model-free checks judge the real release */
    uint64_t stream = c->stream;
    uint32_t s = c->set;
    set_remove(m, id);
    int ai = arena_find(m, stream);
    if (!m->s[s].count) {
        for (size_t i = 0; ai >= 0 && i < m->a[ai].len; i++)
            if (m->a[ai].slot[i] == s) {
                m->a[ai].slot[i] = RP_NIL;
                m->a[ai].flag[i] = 0;
            }
        set_drop(m, s);
    }
    m->count.reserved -= c->size;
    m->count.segments--;
    chunk_delete(m, id);
    if (ai >= 0) {
        /* The compaction free_all_blocks does (its collection points are
         * outside any operation the log shows: not delivered here). */
        arena *a = &m->a[ai];
        size_t j = 0;
        for (size_t i = 0; i < a->len; i++) {
            if (a->slot[i] == RP_NIL || !m->s[a->slot[i]].count)
                continue;
            a->index[j] = a->index[i];
            a->flag[j] = 1;
            a->slot[j++] = a->slot[i];
        }
        a->len = j;
        m->ntouched = MAX_TOUCHED + 1;
        if (!j)
            arena_delete(m, (size_t)ai);
    }
    return RP_OK;
}

/* Would appending a chunk of this size create a set()? */
static int append_creates_set(const arena *a, uint64_t size)
{
    uint64_t bin = bin_of(size);
    size_t index = lower_bound(a->index, a->len, bin);
    return !(index < a->len && a->index[index] == bin && a->slot[index] != RP_NIL);
}

static int in_free_list(const cupy *m, uint32_t id)
{
    return id != RP_NIL && m->c[id].set != RP_NIL;
}

/* The pool's steps without their effects: how many of the points under the
 * lock the operation reaches (arena creation, compaction, split, set()). */
static int cupy5_points(const void *p, uint32_t op, uint64_t arg, uint64_t stream, uint64_t hint)
{
    const cupy *m = p;
    if (op == TF_POOL_OP_FREE) {
        uint64_t *v = rp_ptrmap_get(&m->by_ptr, arg);
        if (!v || !m->c[*v].in_use)
            return 0;
        const chunk *c = &m->c[*v];
        uint64_t size = c->size + (in_free_list(m, c->next) ? m->c[c->next].size : 0) +
                        (in_free_list(m, c->prev) ? m->c[c->prev].size : 0);
        int ai = arena_find(m, c->stream);
        return ai < 0 ? 2 : append_creates_set(&m->a[ai], size);
    }
    uint64_t rounded = (arg + UNIT - 1) / UNIT * UNIT;
    int ai = arena_find(m, stream);
    if (ai < 0)
        return 1;  /* a new arena, and nothing in it: a new segment */
    const arena *a = &m->a[ai];
    size_t index = lower_bound(a->index, a->len, bin_of(rounded));
    for (size_t i = index; i < a->len; i++) {
        if (!a->flag[i] || a->slot[i] == RP_NIL)
            continue;
        int n = i - index >= COMPACTION_THRESHOLD;
        uint64_t *v = hint ? rp_ptrmap_get(&m->by_ptr, hint) : NULL;
        uint32_t id = v && m->c[*v].set == a->slot[i] ? (uint32_t)*v : m->s[a->slot[i]].head;
        if (m->c[id].size <= rounded)
            return n;  /* no split, nothing appended */
        return n + 1 + append_creates_set(a, m->c[id].size - rounded);
    }
    return 0;  /* a new segment: nothing is appended */
}

/* ------------------------------------------------------------- invariants */

static int check_slot(cupy *m, size_t ai, size_t i, const rp_host *h)
{
    arena *a = &m->a[ai];
    if (i + 1 < a->len && a->index[i] >= a->index[i + 1])
        return rp_violate(h, "sorted_index",
                          "arena of stream 0x%llx: a_index[%zu] = %llu is not below a_index[%zu] = %llu; "
                          "lower_bound can now skip the bins a request fits in",
                          (unsigned long long)a->stream, i, (unsigned long long)a->index[i], i + 1,
                          (unsigned long long)a->index[i + 1]);
    uint32_t s = a->slot[i];
    int nonempty = s != RP_NIL && m->s[s].count > 0;
    if ((a->flag[i] != 0) != nonempty)
        return rp_violate(h, "flag_consistent", "arena of stream 0x%llx: a_flag[%zu] = %d but its set holds %u chunks",
                          (unsigned long long)a->stream, i, a->flag[i], s == RP_NIL ? 0 : m->s[s].count);
    return RP_OK;
}

/* The chunks of slot i's set (all, or only the newest: the head, where the
 * last append put it). */
static int check_set(cupy *m, size_t ai, size_t i, int all, const rp_host *h)
{
    arena *a = &m->a[ai];
    uint32_t s = a->slot[i];
    if (s == RP_NIL)
        return RP_OK;
    for (uint32_t id = m->s[s].head; id != RP_NIL; id = all ? m->c[id].fnext : RP_NIL) {
        const chunk *c = &m->c[id];
        if (bin_of(c->size) != a->index[i])
            return rp_violate(h, "bin_membership", "chunk 0x%llx of %llu bytes sits in slot %zu of bin %llu",
                              (unsigned long long)c->ptr, (unsigned long long)c->size, i,
                              (unsigned long long)a->index[i]);
        if (c->stream != a->stream)
            return rp_violate(h, "stream", "chunk 0x%llx of stream 0x%llx in the arena of stream 0x%llx",
                              (unsigned long long)c->ptr, (unsigned long long)c->stream,
                              (unsigned long long)a->stream);
        /* CuPy itself makes this (a collection inside _Chunk.split frees a
         * neighbour of a chunk in no free list) and lives with it: memory
         * fragmented, not lost.  Said once, as a warning. */
        if ((h->audit_all || !m->warned_coalesced) &&
            ((c->next != RP_NIL && m->c[c->next].set != RP_NIL) || (c->prev != RP_NIL && m->c[c->prev].set != RP_NIL))) {
            m->warned_coalesced |= !h->audit_all;
            rp_warn(h, "coalesced", "free chunk 0x%llx has a free neighbour that was not merged (fragmentation; "
                    "said once)", (unsigned long long)c->ptr);
        }
    }
    return RP_OK;
}

static int check_accounting(cupy *m, const rp_host *h)
{
    if (m->orphaned)
        return rp_violate(h, "reachable", "%llu free chunks are in a set no slot of the arena refers to any more "
                          "(arena[index] was overwritten after re-entry)", (unsigned long long)m->orphaned);
    return rp_counts_check(&m->count, h);
}

/* Full audit of the chunk lists: they tile each allocation, link both ways. */
static int check_chunks(cupy *m, const rp_host *h)
{
    for (size_t id = 0; id < m->nc; id++) {
        const chunk *c = &m->c[id];
        if (!chunk_live(m, (uint32_t)id))
            continue;  /* a recycled id */
        if (c->next != RP_NIL &&
            (m->c[c->next].prev != id || c->ptr + c->size != m->c[c->next].ptr))
            return rp_violate(h, "neighbours", "chunk 0x%llx and its next chunk are not adjacent and linked",
                              (unsigned long long)c->ptr);
        if (!c->in_use && c->set == RP_NIL)
            return rp_violate(h, "reachable", "free chunk 0x%llx is in no free list", (unsigned long long)c->ptr);
    }
    return RP_OK;
}

static int cupy_check(void *p, int full, const rp_host *h)
{
    cupy *m = p;
    int audit = full || m->ntouched > MAX_TOUCHED;
    int rc = RP_OK;
    if (audit) {
        for (size_t ai = 0; ai < m->na && !rc; ai++)
            for (size_t i = 0; i < m->a[ai].len && !rc; i++)
                rc = check_slot(m, ai, i, h);
    } else {
        for (int t = 0; t < m->ntouched && !rc; t++) {
            size_t ai = m->touched[t][0], i = m->touched[t][1];
            for (size_t j = i ? i - 1 : 0; ai < m->na && j <= i + 1 && j < m->a[ai].len && !rc; j++)
                rc = check_slot(m, ai, j, h);
        }
    }
    if (audit) {
        /* Past MAX_TOUCHED (a collection re-entered with many frees) the
         * touched list lost track: every slot's newest chunk, at least. */
        for (size_t ai = 0; ai < m->na && !rc; ai++)
            for (size_t i = 0; i < m->a[ai].len && !rc; i++)
                rc = check_set(m, ai, i, full, h);
        if (!rc && full)
            rc = check_chunks(m, h);
    } else {
        for (int t = 0; t < m->ntouched && t < MAX_TOUCHED && !rc; t++)
            if (m->touched[t][0] < m->na && m->touched[t][1] < m->a[m->touched[t][0]].len)
                rc = check_set(m, m->touched[t][0], m->touched[t][1], 0, h);
    }
    m->ntouched = 0;
    return rc ? rc : check_accounting(m, h);
}

static void cupy_stats(const void *p, rp_model_stats *st, int detail)
{
    const cupy *m = p;
    rp_counts_stats(&m->count, st);
    for (size_t ai = 0; detail && ai < m->na; ai++)
        for (size_t i = 0; i < m->a[ai].len; i++) {
            uint32_t s = m->a[ai].slot[i];
            if (s == RP_NIL || !m->s[s].count)
                continue;
            st->free_blocks += m->s[s].count;
            uint64_t size = (m->a[ai].index[i] + 1) * UNIT;
            if (size > st->largest_free)
                st->largest_free = size;
        }
}

/* Only the ladder's gc.collect() re-enters 5.4+. */
static const char *const points_guarded[] = {"_try_malloc: gc.collect()", NULL};
static const rp_place places_guarded[] = {
    {"try_malloc", RP_PLACE_POINT, "_try_malloc: gc.collect()"},
    {"singledevicememorypool_malloc", RP_PLACE_OUTSIDE, NULL},
    {"singledevicememorypool__malloc", RP_PLACE_OUTSIDE, NULL},
    {"pooledmemory_free", RP_PLACE_OUTSIDE, NULL},
    {"pool_malloc", RP_PLACE_OUTSIDE, NULL},
    {"pool_free", RP_PLACE_OUTSIDE, NULL},
    {NULL, 0, NULL},
};

const rp_model_ops rp_model_cupy = {
    .name = "cupy",
    .summary = "CuPy 5.4 to 14.0: bins of 512 bytes, sorted bin index, GC off under the lock",
    .create = create_cupy, .destroy = destroy, .copy = copy, .save = save, .load = load, .alloc = cupy_alloc, .free = cupy_free,
    .release = cupy_release, .check = cupy_check, .stats = cupy_stats,
    .points = NULL, .point_names = points_guarded, .places = places_guarded, .configure = configure_cupy,
    .doc = "CuPy 5.4 to 14.0 (cupy/cuda/memory.pyx): per-stream arenas of 512-byte bins, lower_bound and "
           "forward scan, split and merge as the real code; the garbage collector is off under the pool's lock. "
           "Out of memory: free_all_blocks, retry, gc.collect() and free_all_blocks, retry (the collection's "
           "frees are delivered there); with a memory limit in bytes (CUPY_GPU_MEMORY_LIMIT, cupy.memory_limit) "
           "13+ run the same ladder first and 7 to 12 refuse.  Which of equal chunks set.pop() returns follows "
           "the log.  Not followed: a limit given as a fraction of device memory, set_limit() at run time.",
};

const rp_model_ops rp_model_cupy5 = {
    .name = "cupy5",
    .summary = "CuPy 5.2/5.3: as cupy, but a collection can re-enter wherever the lock's code creates objects",
    .create = create_cupy5, .destroy = destroy, .copy = copy, .save = save, .load = load, .alloc = cupy_alloc, .free = cupy_free,
    .release = cupy_release, .check = cupy_check, .stats = cupy_stats,
    .points = cupy5_points, .point_names = points, .places = places, .configure = configure_cupy5,
    .doc = "CuPy 5.2 and 5.3: the cupy model's algorithm with no GC guard, so a collection can re-enter where "
           "the code creates GC-tracked objects under the lock: _arena's new list, _compact_index's list, "
           "enumerate() and keep_list, free_all_blocks' list, _Chunk.split's new chunk, _append_to_free_list's "
           "set().  Out of memory: free_all_blocks, retry, gc.collect() (5.3: and free_all_blocks), retry.",
};
