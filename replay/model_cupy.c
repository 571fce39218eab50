/*
 * model_cupy.c - CuPy's SingleDeviceMemoryPool, 5.x to 14.0 (cupy/cuda/memory.pyx).
 *
 * Sizes round up to 512 bytes; bin index = (size - 1) // 512, one exact size
 * per bin.  Each stream has an arena: a list of Python sets of free chunks
 * ("slots"), a vector of bin indices (a_index, kept sorted so lower_bound
 * works) and a vector of non-empty flags (a_flag).  _get_chunk finds the
 * first flagged slot at or after lower_bound(bin), pops any chunk, splits it
 * and appends the remainder; free merges with next then prev, then appends.
 *
 * Two models share this code.  "cupy" (5.4+) disables the garbage collector
 * under the pool lock, so nothing re-enters.  "cupy5" (5.2/5.3) does not:
 * _append_to_free_list creates a set() after computing its slot index and
 * before inserting at it; a collection there can run finalizers that free
 * pooled memory into the same arena, and the stale index then breaks the
 * sort order (the seed-000 story).  _Chunk.split creates the remainder
 * object while the popped chunk is in no free list: a collection there
 * frees its neighbours without merging them.  We reproduce the code's exact steps,
 * std::lower_bound included, so a corrupted index misbehaves the same way.
 */
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "trace_format.h" /* TF_POOL_OP_* */
#include "ptrmap.h"
#include "rangeset.h" /* RP_NIL */
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

typedef struct arena {
    uint64_t stream;
    uint64_t *index;        /* a_index: bin numbers */
    int8_t *flag;           /* a_flag */
    uint32_t *slot;         /* arena[i]: set id, RP_NIL for None */
    size_t len, cap;
} arena;

typedef struct cupy {
    int guarded;
    chunk *c;
    size_t nc, capc;
    uint32_t cfree;         /* recycled chunk ids, linked through next */
    fset *s;
    size_t ns, caps;
    uint32_t sfree;         /* recycled set ids, linked through head */
    arena *a;
    size_t na, capa;
    rp_ptrmap by_ptr;       /* chunk start -> chunk id, every chunk */
    rp_model_counts count;
    uint64_t orphaned;      /* free chunks in sets no slot refers to */
    int warned_coalesced;
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
    m->cfree = id;
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

/* Arena slots past na stay zeroed so destroy can free every vector. */
static void grow_arenas(cupy *m, size_t need)
{
    size_t old = m->capa;
    rp_grow(&m->a, &m->capa, need, sizeof *m->a);
    if (m->capa > old)
        memset(m->a + old, 0, (m->capa - old) * sizeof *m->a);
}

static size_t arena_of(cupy *m, uint64_t stream)
{
    for (size_t i = 0; i < m->na; i++)
        if (m->a[i].stream == stream)
            return i;
    grow_arenas(m, m->na + 1);
    m->a[m->na].stream = stream;
    return m->na++;
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

/* Where 5.2/5.3 create a GC-tracked object inside the bookkeeping: a
 * collection may run there. */
static const char *const points[] = {"_Chunk.split: _Chunk.__new__", "_append_to_free_list: set()", NULL};
enum { POINT_SPLIT, POINT_SET };

static void creating_object(cupy *m, int point, const rp_host *h)
{
    if (!m->guarded)
        h->reenter(h->ctx, points[point]);
}

static int append_to_free_list(cupy *m, size_t ai, uint32_t id, const rp_host *h)
{
    uint64_t bin = bin_of(m->c[id].size);
    arena *a = &m->a[ai];
    size_t index = lower_bound(a->index, a->len, bin);
    uint32_t s;
    if (index < a->len && a->index[index] == bin && a->slot[index] != RP_NIL) {
        s = a->slot[index];
    } else if (index < a->len && a->index[index] == bin) {
        /* arena[index] = free_list = set(): the index was computed first */
        creating_object(m, POINT_SET, h);
        a = &m->a[ai];
        if (index >= a->len)
            return rp_violate(h, "index_range", "slot %zu no longer exists after re-entry (arena has %zu)",
                              index, a->len);
        if (a->slot[index] != RP_NIL && m->s[a->slot[index]].count)
            m->orphaned += m->s[a->slot[index]].count;
        s = set_new(m);
        a->slot[index] = s;
    } else {
        /* free_list = set(); then insert at the index computed before it */
        creating_object(m, POINT_SET, h);
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

/* _compact_index: keep the slots holding chunks, in order (a sorted index
 * stays sorted), all flagged. */
static void compact_index(cupy *m, size_t ai)
{
    arena *a = &m->a[ai];
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

static int get_chunk(cupy *m, size_t ai, uint64_t size, const rp_host *h, uint32_t *out)
{
    arena *a = &m->a[ai];
    size_t index = lower_bound(a->index, a->len, bin_of(size));
    *out = RP_NIL;
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
        touch(m, ai, i);
        if (i - index >= COMPACTION_THRESHOLD)
            compact_index(m, ai);
        if (m->c[id].size < size)
            return rp_violate(h, "split_size",
                              "_Chunk.split: chunk of %llu bytes at 0x%llx popped from slot %zu (bin %llu) for a "
                              "request of %llu bytes (assert self.size >= size); the bin index is out of order",
                              (unsigned long long)m->c[id].size, (unsigned long long)m->c[id].ptr, i,
                              (unsigned long long)a->index[i], (unsigned long long)size);
        uint32_t rest = split(m, id, size, h);
        *out = id;
        if (rest != RP_NIL)
            return append_to_free_list(m, ai, rest, h);
        return RP_OK;
    }
    return RP_OK;
}

/* ------------------------------------------------------------- interface */

static void *create_model(int guarded)
{
    cupy *m = rp_xcalloc(1, sizeof *m);
    m->guarded = guarded;
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

static int cupy_alloc(void *p, uint64_t size, uint64_t stream, const rp_host *h, uint64_t *ptr, uint64_t *granted)
{
    cupy *m = p;
    uint64_t rounded = (size + UNIT - 1) / UNIT * UNIT;
    size_t ai = arena_of(m, stream);
    uint32_t id;
    int rc = get_chunk(m, ai, rounded, h, &id);
    if (rc)
        return rc;
    if (id == RP_NIL) {
        /* No free chunk: the pool cudaMallocs exactly the rounded size. */
        uint64_t base = h->segment(h->ctx, rounded);
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
    size_t ai = arena_of(m, m->c[id].stream);
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

/* free_all_blocks: only a whole, free allocation goes back to the device. */
static int cupy_release(void *p, uint64_t base, const rp_host *h)
{
    (void)h;  /* a release never breaks the model: at worst it diverged */
    cupy *m = p;
    uint64_t *v = rp_ptrmap_get(&m->by_ptr, base);
    if (!v)
        return RP_UNKNOWN;
    uint32_t id = (uint32_t)*v;
    chunk *c = &m->c[id];
    if (c->prev != RP_NIL || c->next != RP_NIL || c->set == RP_NIL)
        return RP_UNKNOWN;  /* still in use here: the model diverged; the
                             * model-free checks judge the real release */
    size_t ai = arena_of(m, c->stream);
    uint32_t s = c->set;
    set_remove(m, id);
    arena *a = &m->a[ai];
    if (!m->s[s].count) {
        for (size_t i = 0; i < a->len; i++)
            if (a->slot[i] == s) {
                a->slot[i] = RP_NIL;
                a->flag[i] = 0;
            }
        set_drop(m, s);
    }
    m->count.reserved -= c->size;
    m->count.segments--;
    chunk_delete(m, id);
    compact_index(m, ai);
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

/* The pool's steps without their effects: whether the operation splits a
 * chunk and whether its append creates a set (the re-entrancy points). */
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
        for (size_t ai = 0; ai < m->na; ai++)
            if (m->a[ai].stream == c->stream)
                return append_creates_set(&m->a[ai], size);
        return 1;
    }
    uint64_t rounded = (arg + UNIT - 1) / UNIT * UNIT;
    for (size_t ai = 0; ai < m->na; ai++) {
        const arena *a = &m->a[ai];
        if (a->stream != stream)
            continue;
        for (size_t i = lower_bound(a->index, a->len, bin_of(rounded)); i < a->len; i++) {
            if (!a->flag[i] || a->slot[i] == RP_NIL)
                continue;
            uint64_t *v = hint ? rp_ptrmap_get(&m->by_ptr, hint) : NULL;
            uint32_t id = v && m->c[*v].set == a->slot[i] ? (uint32_t)*v : m->s[a->slot[i]].head;
            if (m->c[id].size <= rounded)
                return 0;  /* no split, nothing appended */
            return 1 + append_creates_set(a, m->c[id].size - rounded);
        }
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
        uint64_t *v = rp_ptrmap_get(&m->by_ptr, c->ptr);
        if (!v || *v != id)
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
            for (size_t j = i ? i - 1 : 0; j <= i + 1 && j < m->a[ai].len && !rc; j++)
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
            if (m->touched[t][1] < m->a[m->touched[t][0]].len)
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

const rp_model_ops rp_model_cupy = {
    "cupy", "CuPy 5.4 to 14.0: bins of 512 bytes, sorted bin index, GC off under the lock",
    create_cupy, destroy, copy, cupy_alloc, cupy_free, cupy_release, cupy_check, cupy_stats, NULL, NULL,
};

const rp_model_ops rp_model_cupy5 = {
    "cupy5", "CuPy 5.2/5.3: as cupy, but a collection can re-enter at set() in _append_to_free_list",
    create_cupy5, destroy, copy, cupy_alloc, cupy_free, cupy_release, cupy_check, cupy_stats, cupy5_points, points,
};
