/* checks.c - model-free checks: address bookkeeping per space. */
#include "checks.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptrmap.h"
#include "rangeset.h"
#include "state.h"
#include "xalloc.h"

/* One address space: what is live, and what was freed (for double frees).
 *
 * A freed block stays in the set, marked, until memory is handed out over
 * it: a free finds there, in the one search it makes anyway, whether its
 * pointer is a live block's, a freed block's (a double free, and when it
 * was freed) or neither, and a pool handing the same address out again
 * turns the mark back in place.  Only the starts of freed blocks that were
 * since covered by another block go to a map (`stale`): a pointer freed
 * again after its memory served someone else is still a double free.  The
 * map of every start ever freed, which this replaces, outgrew the caches
 * and cost a miss on every free. */
typedef struct space {
    const char *name;
    rp_rangeset mem;        /* live: val the seq of the allocation, aux its stack ids;
                               freed: val FREED | the seq of the free (and IN_SEG) */
    size_t nlive;           /* live blocks, and their bytes */
    uint64_t live_bytes;
    rp_ptrmap stale;        /* start -> seq of its free, once covered by another block */
    rp_ptrmap_slot *pending;    /* puts to stale not made yet, in order */
    rp_ptrmap_slot *scratch;    /* as many, for their sort */
    size_t npending, cappending;
    int partial;            /* history lost (rp_checks_forget): an unknown free may be an old block's */
    int odd;                /* a block that wraps the address space went in (a forged log): ranges
                               may overlap since, and claims take the way they always took */
} space;

/* Puts to `stale` wait to be made many at once (rp_ptrmap_put_many): they
 * are frequent, and read only to name a bad free.  The map outgrows the
 * caches, and a put is then a miss: a batch an eighth of the map's size
 * sorted by slot writes it in one sweep, about one line in two, which the
 * processor streams, where 4096 puts at a time each waited for a line. */
#define STALE_BATCH 4096

/* A block's val: its seq, and three marks of ours above the seq's bits (a
 * forged seq that large is shown cut, it cannot set a mark).  IN_SEG: a
 * pool block found inside a segment that is still there; a block handed out
 * again inside a freed one that was needs no search of the segments.
 * GONE (with FREED): a block its context's teardown took (a device reset, a
 * context destroyed), val the teardown's seq; the program may still free
 * it, once, and that is no finding (the driver says what it thinks of it). */
#define FREED (1ULL << 63)
#define IN_SEG (1ULL << 62)
#define GONE (1ULL << 61)
#define SEQ_MASK (GONE - 1)

static int is_freed(const rp_range *r) { return (r->val & FREED) != 0; }
static uint64_t seq_of(const rp_range *r) { return r->val & SEQ_MASK; }
/* What `stale` keeps of a freed block: its free's seq, and GONE. */
static uint64_t stale_val(const rp_range *r) { return r->val & (GONE | SEQ_MASK); }

#define SEG_CACHE 64

/* A segment's val: HOST_SEG marks pinned host memory (cudaHostAlloc) or a VA
 * reservation (cuMemAddressReserve, whose physical memory is VMM handles) a
 * pool obtained inside its operation: its blocks are inside a segment, but
 * its bytes are no device memory the pool reserved (the figures leave it
 * out). */
#define HOST_SEG (1ULL << 63)

static uint64_t seg_bytes(const rp_range *r) { return r->val & HOST_SEG ? 0 : r->end - r->start; }
static uint64_t seg_count(const rp_range *r) { return r->val & HOST_SEG ? 0 : 1; }

typedef struct pool_state {
    uint32_t id;
    space blocks;
    rp_rangeset segs;       /* val: seq that obtained it, and HOST_SEG */
    /* The segments of recent blocks, by the block's 64 KiB page: most blocks
     * land in a segment met lately, and the set is then not searched. */
    struct { uint64_t lo, hi; } seg_cache[SEG_CACHE];
    int seen_segments;      /* the outside-segment check needs to know them */
    int partial;            /* history lost: its older segments are unknown */
    int by_reference;       /* rp_checks_pool_holds_by_reference */
    rp_pool_figures fig;
    /* Zero-byte blocks (requested and granted 0) live at each address, a
     * count: they hold no memory, so several may share an address, or sit
     * at a live block's start or one past a segment's end (a bump pointer
     * handed out as it is), and none of that is an overlap. */
    rp_ptrmap zeros;
} pool_state;

/* The CUDA spaces that hold memory (format/cuda_api.h), then large host buffers. */
enum { SP_HOST = TF_SPACE_COUNT, SP_COUNT };
static const char *const space_names[SP_COUNT] = {
    [TF_SPACE_DEVICE] = "device memory", [TF_SPACE_PINNED] = "pinned host memory", [TF_SPACE_HANDLE] = "VMM handles",
    [TF_SPACE_VA] = "VA reservations", [SP_HOST] = "host buffers",
};

/* A release is recorded before the real call (it must precede any
 * allocation that reuses the memory); when the call then fails, a
 * release_failed event names it, and what the release erased is taken back:
 * the block is live again, as it was.
 *
 * The failure comes on the releasing thread, after its call returned and
 * so before that thread's next release of the same kind of memory
 * (FORMAT.md, section 7; a CUDA call made inside another records nothing).
 * Other threads may record any number of events in between: a window of
 * the latest releases of the whole process (256 of them, once) lost a
 * failure that came late, left the block freed, and made the program's
 * real free a false double_free.  So each thread's pending release is kept,
 * one per thread and family (CUDA, host), until its failure comes or the
 * thread's next release of that family says it cannot come any more. */
typedef struct undo {
    uint64_t seq;           /* of the release */
    uint32_t tid;           /* its thread */
    int sp;                 /* space index */
    rp_range block;         /* what the release erased */
    uint32_t seg_pool;      /* the pool whose segment it released, 0 if none */
    rp_range seg;
    uint64_t handle_ref;    /* a VMM handle one of whose extra references it dropped, 0 none */
} undo;

struct rp_checks {
    space sp[SP_COUNT];
    undo *undos;            /* the pending releases, in no order */
    size_t nundo, capundo;
    rp_ptrmap undo_at;      /* release seq -> position in undos */
    rp_ptrmap undo_thread;  /* undo_key(tid, space) -> seq of its pending release */
    pool_state *pools;      /* in order of first appearance */
    size_t npools, cappools;
    rp_ptrmap pool_index;   /* pool id -> position in pools */
    size_t last_pool;       /* position of the pool found last */
    rp_ptrmap seg_owner;    /* device allocation base -> pool owning it */
    rp_ptrmap handle_refs;  /* live VMM handle -> references beyond the first (retained, imported) */
    rp_ptrmap block_dev;    /* device or pinned block's start -> its device, when not 0 (-1: unknown);
                               kept after a free: the next block there sets or clears it */
    uint64_t *gone;         /* starts of the device blocks the last teardown took (rp_checks_gone) */
    size_t ngone, capgone;
    uint64_t *unseen;       /* starts of the pool blocks the last event freed unseen (rp_checks_unseen) */
    size_t nunseen, capunseen;
    rp_finding warn[RP_CHECKS_MAX_WARNINGS];
    uint32_t nwarn;
    uint64_t total_warn;
    int partial;            /* history lost: pools met later are partial too */
};

static void space_init(space *s, const char *name)
{
    memset(s, 0, sizeof *s);
    s->name = name;
    rp_rangeset_init(&s->mem);
    rp_ptrmap_init(&s->stale);
}

static void space_free(space *s)
{
    rp_rangeset_free(&s->mem);
    rp_ptrmap_free(&s->stale);
    free(s->pending);
    free(s->scratch);
}

rp_checks *rp_checks_new(void)
{
    rp_checks *c = rp_xcalloc(1, sizeof *c);
    for (int i = 0; i < SP_COUNT; i++)
        space_init(&c->sp[i], space_names[i]);
    rp_ptrmap_init(&c->seg_owner);
    rp_ptrmap_init(&c->handle_refs);
    rp_ptrmap_init(&c->block_dev);
    rp_ptrmap_init(&c->pool_index);
    rp_ptrmap_init(&c->undo_at);
    rp_ptrmap_init(&c->undo_thread);
    return c;
}

void rp_checks_free(rp_checks *c)
{
    if (!c)
        return;
    for (int i = 0; i < SP_COUNT; i++)
        space_free(&c->sp[i]);
    for (size_t i = 0; i < c->npools; i++) {
        space_free(&c->pools[i].blocks);
        rp_rangeset_free(&c->pools[i].segs);
        rp_ptrmap_free(&c->pools[i].zeros);
    }
    free(c->pools);
    rp_ptrmap_free(&c->pool_index);
    rp_ptrmap_free(&c->seg_owner);
    rp_ptrmap_free(&c->handle_refs);
    rp_ptrmap_free(&c->block_dev);
    free(c->gone);
    free(c->unseen);
    free(c->undos);
    rp_ptrmap_free(&c->undo_at);
    rp_ptrmap_free(&c->undo_thread);
    free(c);
}

void rp_checks_forget(rp_checks *c)
{
    for (int i = 0; i < SP_COUNT; i++) {
        space_free(&c->sp[i]);
        space_init(&c->sp[i], space_names[i]);
        c->sp[i].partial = 1;
    }
    for (size_t i = 0; i < c->npools; i++) {
        pool_state *p = &c->pools[i];
        space_free(&p->blocks);
        space_init(&p->blocks, "pool blocks");
        rp_rangeset_free(&p->segs);
        rp_rangeset_init(&p->segs);
        rp_ptrmap_free(&p->zeros);
        rp_ptrmap_init(&p->zeros);
        p->blocks.partial = p->partial = 1;
        memset(p->seg_cache, 0, sizeof p->seg_cache);
        p->seen_segments = 0;
        p->fig.reserved = p->fig.allocated = p->fig.segments = p->fig.blocks = 0;
    }
    rp_ptrmap_free(&c->seg_owner);
    rp_ptrmap_init(&c->seg_owner);
    rp_ptrmap_free(&c->handle_refs);
    rp_ptrmap_init(&c->handle_refs);
    rp_ptrmap_free(&c->block_dev);
    rp_ptrmap_init(&c->block_dev);
    c->ngone = 0;
    /* A failure still to come names a release whose block is forgotten
     * with the rest: nothing to take back. */
    c->nundo = 0;
    rp_ptrmap_free(&c->undo_at);
    rp_ptrmap_init(&c->undo_at);
    rp_ptrmap_free(&c->undo_thread);
    rp_ptrmap_init(&c->undo_thread);
    c->partial = 1;
}

/* Pool ids come from the log: an array indexed by them would be as large as
 * a forged id asks, so pools are kept densely and found through a map. */
static const pool_state *pool_lookup(const rp_checks *c, uint32_t id)
{
    const uint64_t *at = rp_ptrmap_get(&c->pool_index, id);
    if (!at)
        return NULL;
    ((rp_checks *)c)->last_pool = (size_t)*at;
    return &c->pools[*at];
}

static inline const pool_state *pool_find(const rp_checks *c, uint32_t id)
{
    /* Events of one pool come in runs: the last one found first. */
    if (c->npools && c->pools[c->last_pool].id == id)
        return &c->pools[c->last_pool];
    return pool_lookup(c, id);
}

static pool_state *pool_of(rp_checks *c, uint32_t id)
{
    const pool_state *found = pool_find(c, id);
    if (found)
        return (pool_state *)found;
    rp_grow(&c->pools, &c->cappools, c->npools + 1, sizeof *c->pools);
    pool_state *p = &c->pools[c->npools];
    memset(p, 0, sizeof *p);
    p->id = id;
    space_init(&p->blocks, "pool blocks");
    p->partial = p->blocks.partial = c->partial;
    rp_rangeset_init(&p->segs);
    rp_ptrmap_init(&p->zeros);
    rp_ptrmap_put(&c->pool_index, id, c->npools++);
    return p;
}

static rp_site site_of(const tf_event *e)
{
    return (rp_site){e->seq, e->tid, e->native_stack, e->py_stack};
}

static uint64_t pack_stacks(const tf_event *e)
{
    return (uint64_t)e->native_stack << 32 | e->py_stack;
}

static rp_site site_of_range(const rp_range *r)
{
    return (rp_site){r->val & SEQ_MASK, 0, (uint32_t)(r->aux >> 32), (uint32_t)r->aux};
}

static int report(rp_finding *v, const char *inv, rp_site at, rp_site other, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int report(rp_finding *v, const char *inv, rp_site at, rp_site other, const char *fmt, ...)
{
    va_list ap;
    memset(v, 0, sizeof *v);
    snprintf(v->invariant, sizeof v->invariant, "%s", inv);
    va_start(ap, fmt);
    vsnprintf(v->message, sizeof v->message, fmt, ap);
    va_end(ap);
    v->at = at;
    v->other = other;
    return 1;
}

static rp_finding *warning(rp_checks *c)
{
    c->total_warn++;
    if (c->nwarn == RP_CHECKS_MAX_WARNINGS)
        return NULL;
    return &c->warn[c->nwarn++];
}

void rp_checks_add_warning(rp_checks *c, const rp_finding *w)
{
    rp_finding *slot = warning(c);
    if (slot)
        *slot = *w;
}

#define ULL(x) ((unsigned long long)(x))

static void stale_fold(space *s)
{
    if (!s->npending)
        return;
    rp_ptrmap_put_many(&s->stale, s->pending, s->npending, s->scratch);
    s->npending = 0;
    if (s->cappending < s->stale.cap / 8) {
        s->cappending = s->stale.cap / 8;
        s->pending = rp_xrealloc(s->pending, s->cappending * sizeof *s->pending);
        s->scratch = rp_xrealloc(s->scratch, s->cappending * sizeof *s->scratch);
    }
}

static void stale_put(space *s, uint64_t start, uint64_t seq)
{
    if (!s->pending) {
        s->cappending = STALE_BATCH;
        s->pending = rp_xmalloc(s->cappending * sizeof *s->pending);
        s->scratch = rp_xmalloc(s->cappending * sizeof *s->scratch);
    }
    s->pending[s->npending++] = (rp_ptrmap_slot){start, seq};
    if (s->npending == s->cappending)
        stale_fold(s);
}

static uint64_t stale_get(space *s, uint64_t start)
{
    stale_fold(s);
    const uint64_t *seq = rp_ptrmap_get(&s->stale, start);
    return seq ? *seq : 0;
}

static void count_live(space *s, const rp_range *r, int sign)
{
    s->nlive += (size_t)sign;
    s->live_bytes += (uint64_t)sign * (r->end - r->start);
}

/* The first live block intersecting [start, end), in address order. */
typedef struct live_hit { const rp_range *first, *last; } live_hit;

static int note_live(rp_range *r, void *arg)
{
    live_hit *h = arg;
    if (is_freed(r))
        return 0;
    if (!h->first)
        h->first = r;
    h->last = r;
    return 0;
}

static int in_use(const rp_range *r, void *arg)
{
    (void)arg;
    return !is_freed(r);
}

typedef struct covering { space *s; uint64_t ptr; } covering;

/* A block in the way of one handed out at ptr leaves the set. */
static void covered(const rp_range *r, void *arg)
{
    covering *c = arg;
    if (!is_freed(r))
        count_live(c->s, r, -1);
    else if (r->start != c->ptr)
        stale_put(c->s, r->start, stale_val(r));
}

/* Hand out [ptr, end): freed blocks it covers leave the set (their starts,
 * when not ptr, go to `stale`); live ones it overlaps are dropped when drop
 * is set, else nothing changes and the first of them is copied to *clash
 * (return 0).  1 once the block is in.  r: rp_rangeset_before_pos(end - 1,
 * ptr, pos), which the caller has looked up. */
static int claim_at(space *s, rp_range *r, const rp_rangeset_pos *pos, uint64_t ptr, uint64_t end, uint64_t val,
                    uint64_t aux, int drop, rp_range *clash)
{
    if (end <= ptr)
        s->odd = 1;
    if (r && r->start == ptr && is_freed(r)) {
        /* The last one starting before end starts at ptr: it is the only one
         * in the way.  A pool handing an address out again: in place. */
        rp_rangeset_set_end(&s->mem, r, end);
        r->val = val;
        r->aux = aux;
        count_live(s, r, 1);
        return 1;
    }
    if (!s->odd) {
        /* The search made for r found where the block goes. */
        covering c = {s, ptr};
        if (!rp_rangeset_put(&s->mem, pos, ptr, end, val, aux, drop ? NULL : in_use, covered, &c, clash))
            return 0;
        count_live(s, &(rp_range){ptr, end, 0, 0}, 1);
        return 1;
    }
    /* A size that wraps the address space (a forged log), now or before:
     * what the checks always did, a search per step, so that even on ranges
     * that overlap the same blocks are found and dropped. */
    if (r && r->end > ptr) {
        if (!drop) {
            live_hit h = {NULL, NULL};
            rp_rangeset_walk_range(&s->mem, ptr, end, note_live, &h);
            if (h.first) {
                *clash = *h.first;
                return 0;
            }
        }
        while ((r = rp_rangeset_before(&s->mem, end - 1)) && r->end > ptr) {
            if (!is_freed(r))
                count_live(s, r, -1);
            else if (r->start != ptr)
                stale_put(s, r->start, stale_val(r));
            rp_rangeset_erase(&s->mem, r->start, NULL);
        }
    }
    rp_rangeset_insert(&s->mem, ptr, end, val, aux);
    count_live(s, &(rp_range){ptr, end, 0, 0}, 1);
    return 1;
}

static int claim(space *s, uint64_t ptr, uint64_t end, uint64_t val, uint64_t aux, int drop, rp_range *clash)
{
    rp_rangeset_pos pos;
    rp_range *r = rp_rangeset_before_pos(&s->mem, end - 1, ptr, &pos);
    return claim_at(s, r, &pos, ptr, end, val, aux, drop, clash);
}

/* at: rp_rangeset_before_pos(&s->mem, end - 1, ptr, pos); marks: IN_SEG or 0. */
static int space_alloc(space *s, rp_range *at, const rp_rangeset_pos *pos, const tf_event *e, uint64_t ptr,
                       uint64_t end, uint64_t marks, rp_finding *v)
{
    rp_range r;
    if (!claim_at(s, at, pos, ptr, end, (e->seq & SEQ_MASK) | marks, pack_stacks(e), 0, &r))
        return report(v, "overlap", site_of(e), site_of_range(&r),
                      "%s: [0x%llx, 0x%llx) handed out while [0x%llx, 0x%llx) is still live", s->name, ULL(ptr),
                      ULL(end), ULL(r.start), ULL(r.end));
    return 0;
}

/* Large host blocks: the tracer cannot see every release (the C library
 * frees or reallocs a caller's buffer through internal calls), so a block
 * handed out over a live one means the old one was released unseen, not
 * that the allocator handed out memory twice: the old one is dropped. */
static int host_alloc(space *s, const tf_event *e)
{
    uint64_t end = e->u.host.ptr + (e->u.host.size ? e->u.host.size : 1);
    rp_range r;
    claim(s, e->u.host.ptr, end, e->seq & SEQ_MASK, pack_stacks(e), 1, &r);
    return 0;
}

/* 1 with *v on a bad free; *size gets the block's size when it was live
 * (and *erased, if given, the block itself; else its start is 0). */
static int space_free_block(space *s, const tf_event *e, uint64_t ptr, int check_unknown, uint64_t *size,
                            rp_range *erased, rp_finding *v)
{
    *size = 0;
    if (erased)
        erased->start = erased->end = 0;
    rp_range *r = rp_rangeset_before(&s->mem, ptr);
    if (r && r->start == ptr && !is_freed(r)) {
        *size = r->end - r->start;
        if (erased)
            *erased = *r;
        count_live(s, r, -1);
        r->val = FREED | (r->val & IN_SEG) | (e->seq & SEQ_MASK);
        r->aux = 0;
        return 0;
    }
    if (r && ptr < r->end && !is_freed(r) && check_unknown)
        return report(v, "free_unknown", site_of(e), site_of_range(r),
                      "%s: 0x%llx freed, but it is inside the live block [0x%llx, 0x%llx), not its start", s->name,
                      ULL(ptr), ULL(r->start), ULL(r->end));
    uint64_t prev = 0;
    if (r && r->start == ptr && (r->val & GONE)) {
        /* Its context's teardown took it: a free now is the program's
         * first, no double free; a second is one. */
        if (erased)
            *erased = *r;
        r->val = FREED | (r->val & IN_SEG) | (e->seq & SEQ_MASK);
        return 0;
    }
    if (r && r->start == ptr)
        prev = seq_of(r);   /* a freed block's */
    else
        prev = stale_get(s, ptr);
    if (prev & GONE)
        return 0;   /* a block a teardown took, since partly covered by another: forgotten */
    if (prev)
        return report(v, "double_free", site_of(e), (rp_site){prev, 0, 0, 0},
                      "%s: 0x%llx freed again; it was freed at seq %llu and not handed out since", s->name,
                      ULL(ptr), ULL(prev));
    if (!check_unknown || s->partial)
        return 0;
    return report(v, "free_unknown", site_of(e), (rp_site){0, 0, 0, 0},
                  "%s: 0x%llx freed, but it was never handed out", s->name, ULL(ptr));
}

static int space_free_ptr(space *s, const tf_event *e, uint64_t ptr, int check_unknown, uint64_t *size,
                          rp_finding *v)
{
    return space_free_block(s, e, ptr, check_unknown, size, NULL, v);
}

/* A thread's releases of CUDA memory and of host buffers are made by
 * different calls, and a host free may be recorded inside a CUDA one (the
 * runtime's own buffers): each family has its pending release. */
static uint64_t undo_key(uint32_t tid, int sp) { return (uint64_t)tid << 1 | (sp == SP_HOST); }

static void undo_drop(rp_checks *c, size_t i)
{
    undo *u = &c->undos[i];
    uint64_t *mine = rp_ptrmap_get(&c->undo_thread, undo_key(u->tid, u->sp));
    if (mine && *mine == u->seq)
        rp_ptrmap_del(&c->undo_thread, undo_key(u->tid, u->sp), NULL);
    rp_ptrmap_del(&c->undo_at, u->seq, NULL);
    if (i != --c->nundo) {
        *u = c->undos[c->nundo];
        rp_ptrmap_put(&c->undo_at, u->seq, i);
    }
}

/* The release e (of space sp) erased block: kept until its failure can no
 * longer come.  This release began after the thread's previous one of the
 * same family returned, so that one's failure, if any, is in already. */
static undo *undo_note(rp_checks *c, const tf_event *e, int sp, const rp_range *block)
{
    uint64_t prev, *at;
    if (rp_ptrmap_swap(&c->undo_thread, undo_key(e->tid, sp), e->seq, &prev) &&
        (at = rp_ptrmap_get(&c->undo_at, prev)) != NULL)
        undo_drop(c, (size_t)*at);
    if ((at = rp_ptrmap_get(&c->undo_at, e->seq)) != NULL)
        undo_drop(c, (size_t)*at);   /* a forged log's seq told twice: the later release wins */
    rp_grow(&c->undos, &c->capundo, c->nundo + 1, sizeof *c->undos);
    undo *u = &c->undos[c->nundo];
    *u = (undo){.seq = e->seq, .tid = e->tid, .sp = sp, .block = *block};
    rp_ptrmap_put(&c->undo_at, e->seq, c->nundo++);
    rp_ptrmap_put(&c->undo_thread, undo_key(e->tid, sp), e->seq);
    return u;
}

static void note_peak(pool_state *p)
{
    if (p->fig.reserved > p->fig.peak_reserved)
        p->fig.peak_reserved = p->fig.reserved;
    if (p->fig.allocated > p->fig.peak_allocated)
        p->fig.peak_allocated = p->fig.allocated;
}

static void segment_grow(rp_checks *c, uint32_t pool, const tf_event *e, uint64_t ptr, uint64_t size, int host)
{
    pool_state *p = pool_of(c, pool);
    p->seen_segments = 1;
    const rp_range *o;
    if (!host) {
        /* Device memory mapped into an address range the pool reserved (a
         * HOST_SEG): the mapping takes its place there, the rest of the
         * range stays the pool's. */
        while ((o = rp_rangeset_overlap(&p->segs, ptr, ptr + size)) != NULL && (o->val & HOST_SEG)) {
            rp_range r = *o;
            rp_rangeset_erase(&p->segs, r.start, NULL);
            if (r.start < ptr)
                rp_rangeset_insert(&p->segs, r.start, ptr, r.val, r.aux);
            if (r.end > ptr + size)
                rp_rangeset_insert(&p->segs, ptr + size, r.end, r.val, r.aux);
        }
    }
    if (rp_rangeset_overlap(&p->segs, ptr, ptr + size))
        return;  /* the same segment told twice (a hook and a cudaMalloc) */
    rp_rangeset_insert(&p->segs, ptr, ptr + size, (e->seq & SEQ_MASK) | (host ? HOST_SEG : 0), pack_stacks(e));
    if (host)
        return;
    p->fig.reserved += size;
    p->fig.segments++;
    note_peak(p);
}

static int out_of_segment(rp_range *r, void *arg)
{
    r->val &= ~IN_SEG;
    return note_live(r, arg);
}

/* A release of [ptr, ptr + size) that is not one whole segment: PyTorch's
 * expandable segments unmap the free pages of a range they mapped page by
 * page, so a release can cover several mappings, or part of one.  What is
 * left of a mapping stays obtained.  Returns the bytes released (0: none). */
static uint64_t release_range(pool_state *p, uint64_t ptr, uint64_t size, rp_range *all)
{
    uint64_t end = ptr + size, gone = 0;
    const rp_range *o;
    *all = (rp_range){.start = ptr, .end = end};
    while ((o = rp_rangeset_overlap(&p->segs, ptr, end)) != NULL) {
        rp_range r = *o;
        rp_rangeset_erase(&p->segs, r.start, NULL);
        p->fig.segments -= seg_count(&r);
        if (r.start < ptr) {
            rp_rangeset_insert(&p->segs, r.start, ptr, r.val, r.aux);
            p->fig.segments += seg_count(&r);
        }
        if (r.end > end) {
            rp_rangeset_insert(&p->segs, end, r.end, r.val, r.aux);
            p->fig.segments += seg_count(&r);
        }
        if (!(r.val & HOST_SEG))
            gone += (r.end < end ? r.end : end) - (r.start > ptr ? r.start : ptr);
    }
    p->fig.reserved -= gone;
    return gone;
}

typedef struct pool_teardown { pool_state *p; uint64_t seq; } pool_teardown;
static int take_pool_block(rp_range *r, void *arg);

static int note_unseen(rp_range *r, void *arg)
{
    rp_checks *c = arg;
    if (!is_freed(r)) {
        rp_grow(&c->unseen, &c->capunseen, c->nunseen + 1, sizeof *c->unseen);
        c->unseen[c->nunseen++] = r->start;
    }
    return 0;
}

static int segment_release(rp_checks *c, uint32_t pool, const tf_event *e, uint64_t ptr, uint64_t size,
                           rp_finding *v)
{
    pool_state *p = pool_of(c, pool);
    rp_range r;
    const rp_range *whole = rp_rangeset_find(&p->segs, ptr);
    if (whole && whole->start == ptr && (!size || whole->end - whole->start == size)) {
        rp_rangeset_erase(&p->segs, ptr, &r);
        const uint64_t *at;
        if (e->kind == TF_EV_CUDA_FREE && (at = rp_ptrmap_get(&c->undo_at, e->seq)) != NULL) {
            undo *u = &c->undos[*at];   /* the CUDA free's own, noted just before */
            u->seg_pool = pool;
            u->seg = r;
        }
        p->fig.reserved -= seg_bytes(&r);
        p->fig.segments -= seg_count(&r);
    } else if (!size || !release_range(p, ptr, size, &r)) {
        return 0;  /* told twice, or never obtained inside a traced operation */
    }
    memset(p->seg_cache, 0, sizeof p->seg_cache);  /* releases are rare */
    /* The device allocation there is no longer this pool's segment; one of
     * another pool (whose block this pool's segment was) stays that pool's. */
    const uint64_t *owner = rp_ptrmap_get(&c->seg_owner, ptr);
    if (owner && *owner == pool)
        rp_ptrmap_del(&c->seg_owner, ptr, NULL);
    /* The witness is the last live block in it (the highest).  No block in
     * it is inside a segment any more. */
    live_hit h = {NULL, NULL};
    rp_rangeset_walk_range(&p->blocks.mem, r.start, r.end, out_of_segment, &h);
    const rp_range *b = h.last;
    if (b && p->by_reference && e->kind == TF_EV_CUDA_FREE) {
        rp_finding *w = warning(c);
        if (w)
            report(w, "unseen_free", site_of(e), site_of_range(b),
                   "pool %u: device memory [0x%llx, 0x%llx) freed while block [0x%llx, 0x%llx) in it was live: its "
                   "free was not recorded (CuPy frees a chunk without its pool, and without the hook, once the "
                   "MemoryPool object is gone)",
                   pool, ULL(r.start), ULL(r.end), ULL(b->start), ULL(b->end));
        pool_teardown t = {p, e->seq & SEQ_MASK};
        rp_rangeset_walk_range(&p->blocks.mem, r.start, r.end, note_unseen, c);
        rp_rangeset_walk_range(&p->blocks.mem, r.start, r.end, take_pool_block, &t);
        return 0;
    }
    if (b)
        return report(v, "segment_in_use", site_of(e), site_of_range(b),
                      "pool %u released segment [0x%llx, 0x%llx) while block [0x%llx, 0x%llx) in it is live", pool,
                      ULL(r.start), ULL(r.end), ULL(b->start), ULL(b->end));
    return 0;
}

static int alloc_failed(rp_checks *c, const tf_event *e, uint32_t owner_pool)
{
    rp_finding *w = warning(c);
    if (!w)
        return 0;
    rp_pool_figures f = rp_checks_pool(c, owner_pool);
    report(w, "alloc_failed", site_of(e), (rp_site){0, 0, 0, 0},
           "%s of %llu bytes failed (error %d); device memory live %llu bytes in %zu blocks", tf_api_name(e->u.cuda.api),
           ULL(e->u.cuda.size), e->u.cuda.result, ULL(c->sp[TF_SPACE_DEVICE].live_bytes), c->sp[TF_SPACE_DEVICE].nlive);
    if (owner_pool)
        snprintf(w->message + strlen(w->message), sizeof w->message - strlen(w->message),
                 "; pool %u reserved %llu, allocated %llu in %llu segments", owner_pool, ULL(f.reserved),
                 ULL(f.allocated), ULL(f.segments));
    return 0;
}

/* A retain (cuMemRetainAllocationHandle) or an import of a handle gives a
 * reference to an allocation that may be live already: the driver answers
 * with the handle that names it, which the program releases once per
 * reference.  cuMemCreate makes a new one: the same handle twice is an
 * overlap. */
static int handle_reference(uint32_t api)
{
    return api == TF_API_cuMemRetainAllocationHandle || api == TF_API_cuMemImportFromShareableHandle;
}

static int handle_live(space *s, uint64_t h)
{
    const rp_range *r = rp_rangeset_before(&s->mem, h);
    return r && r->start == h && !is_freed(r);
}

/* The device a device or pinned block belongs to: kept only when it is not
 * 0 (most programs have one device, and pay nothing). */
static void note_device(rp_checks *c, const tf_event *e)
{
    if (e->u.cuda.device)
        rp_ptrmap_put(&c->block_dev, e->u.cuda.ptr, (uint64_t)(int64_t)e->u.cuda.device);
    else if (c->block_dev.len)
        rp_ptrmap_del(&c->block_dev, e->u.cuda.ptr, NULL);
}

typedef struct teardown_walk {
    rp_checks *c;
    int sp;
    int device;             /* whose memory went; -1 unknown: everyone's */
    uint64_t seq;
} teardown_walk;

static int take_pool_block(rp_range *r, void *arg)
{
    pool_teardown *t = arg;
    if (is_freed(r))
        return 0;
    count_live(&t->p->blocks, r, -1);
    t->p->fig.allocated -= r->end - r->start;
    t->p->fig.blocks--;
    r->val = FREED | GONE | (r->val & IN_SEG) | t->seq;
    r->aux = 0;
    return 0;
}

/* A pool's segment [start, end) went with its context: the blocks in it
 * went too (GONE: a free of one later is no finding, a block handed out
 * there again no overlap), and the pool holds the segment no more. */
static void pool_segment_gone(rp_checks *c, uint32_t pool, uint64_t start, uint64_t end, uint64_t seq)
{
    pool_state *p = pool_of(c, pool);
    pool_teardown t = {p, seq};
    rp_rangeset_walk_range(&p->blocks.mem, start, end, take_pool_block, &t);
    rp_range all;
    release_range(p, start, end - start, &all);
    memset(p->seg_cache, 0, sizeof p->seg_cache);
}

static int take_block(rp_range *r, void *arg)
{
    teardown_walk *t = arg;
    rp_checks *c = t->c;
    if (is_freed(r))
        return 0;
    if (t->device >= 0) {
        const uint64_t *d = rp_ptrmap_get(&c->block_dev, r->start);
        int dev = d ? (int)(int64_t)*d : 0;
        if (dev >= 0 && dev != t->device)
            return 0;   /* another device's (a block of unknown device goes) */
    }
    count_live(&c->sp[t->sp], r, -1);
    r->val = FREED | GONE | (r->val & IN_SEG) | t->seq;
    r->aux = 0;
    /* A pool's segment no more: a block handed out there later and freed
     * is not that pool's segment released.  The pool's blocks in it went
     * with it. */
    uint64_t owner;
    if (rp_ptrmap_del(&c->seg_owner, r->start, &owner))
        pool_segment_gone(c, (uint32_t)owner, r->start, r->end, t->seq);
    if (t->sp == TF_SPACE_DEVICE) {
        rp_grow(&c->gone, &c->capgone, c->ngone + 1, sizeof *c->gone);
        c->gone[c->ngone++] = r->start;
    }
    return 0;
}

/* A context torn down (a device reset, a primary context reset or last
 * release, a context destroyed): the driver freed its device, managed and
 * pinned host memory with no free call, and hands those addresses out
 * again.  Every live device and pinned block of the event's device goes
 * (GONE): no overlap with what comes next, no leak at the end, and a free of
 * it later is the program's business, not a double free.  The log does not
 * say which context a block was made in, so all of the device's go, those
 * of its other contexts and its memory pools' (which a context's
 * destruction leaves, by the documentation) too: a block wrongly taken
 * costs its leak and its bytes, never a finding.  Device -1 (unknown):
 * every device's.  VMM handles and reservations belong to no context. */
static void teardown(rp_checks *c, const tf_event *e)
{
    c->ngone = 0;
    for (int sp = TF_SPACE_DEVICE; sp <= TF_SPACE_PINNED; sp++) {
        teardown_walk t = {c, sp, e->u.cuda.device, e->seq & SEQ_MASK};
        rp_rangeset_walk_range(&c->sp[sp].mem, 0, UINT64_MAX, take_block, &t);
    }
}

static int cuda_event(rp_checks *c, const tf_event *e, uint32_t owner_pool, rp_finding *v)
{
    tf_space sp = tf_api_space(e->u.cuda.api);
    if (sp == TF_SPACE_CONTEXT && e->kind == TF_EV_CUDA_FREE && !e->u.cuda.result) {
        teardown(c, e);
        return 0;
    }
    if (sp < 0 || sp >= TF_SPACE_COUNT)
        return 0;  /* a mapping, or an entry point this version does not know */
    if (e->kind == TF_EV_CUDA_ALLOC) {
        if (e->u.cuda.result != 0)
            return alloc_failed(c, e, owner_pool);
        if (!e->u.cuda.ptr)
            return 0;  /* a zero-byte request */
        space *s = &c->sp[sp];
        if (sp == TF_SPACE_HANDLE && handle_reference(e->u.cuda.api) && handle_live(s, e->u.cuda.ptr)) {
            uint64_t *refs = rp_ptrmap_get(&c->handle_refs, e->u.cuda.ptr);
            if (refs)
                ++*refs;
            else
                rp_ptrmap_put(&c->handle_refs, e->u.cuda.ptr, 1);
            return 0;
        }
        /* A VMM handle (cuMemCreate) names physical memory, it is no
         * address: two live handles `size` apart are no overlap, only the
         * same handle twice is.  (As a range, the driver double's handles,
         * one apart, overlapped at the second cuMemCreate.) */
        uint64_t end = sp == TF_SPACE_HANDLE ? e->u.cuda.ptr + 1
                                             : e->u.cuda.ptr + (e->u.cuda.size ? e->u.cuda.size : 1);
        rp_rangeset_pos pos;
        rp_range *at = rp_rangeset_before_pos(&s->mem, end - 1, e->u.cuda.ptr, &pos);
        if (space_alloc(s, at, &pos, e, e->u.cuda.ptr, end, 0, v))
            return 1;
        if (sp == TF_SPACE_DEVICE || sp == TF_SPACE_PINNED)
            note_device(c, e);
        if ((sp == TF_SPACE_DEVICE || sp == TF_SPACE_PINNED || sp == TF_SPACE_VA) && owner_pool) {
            /* Pinned host memory and address ranges obtained inside the
             * operation are the pool's too (a pinned pool, a device pool's
             * fallback, one that grows by mapping VMM handles). */
            segment_grow(c, owner_pool, e, e->u.cuda.ptr, e->u.cuda.size, sp != TF_SPACE_DEVICE);
            rp_ptrmap_put(&c->seg_owner, e->u.cuda.ptr, owner_pool);
        }
        return 0;
    }
    if (!e->u.cuda.ptr || e->u.cuda.result != 0)
        return 0;  /* freeing NULL is allowed; a failed free freed nothing (logs before 1.1) */
    uint64_t size;
    rp_range block;
    uint64_t *refs = sp == TF_SPACE_HANDLE ? rp_ptrmap_get(&c->handle_refs, e->u.cuda.ptr) : NULL;
    if (refs) {
        /* One reference of several: the handle stays live. */
        if (!--*refs)
            rp_ptrmap_del(&c->handle_refs, e->u.cuda.ptr, NULL);
        undo_note(c, e, sp, &(rp_range){0})->handle_ref = e->u.cuda.ptr;
        return 0;
    }
    if (space_free_block(&c->sp[sp], e, e->u.cuda.ptr, 1, &size, &block, v))
        return 1;
    undo_note(c, e, sp, &block);
    uint64_t *owner = sp == TF_SPACE_DEVICE || sp == TF_SPACE_PINNED || sp == TF_SPACE_VA
                          ? rp_ptrmap_get(&c->seg_owner, e->u.cuda.ptr)
                          : NULL;
    return owner ? segment_release(c, (uint32_t)*owner, e, e->u.cuda.ptr, 0, v) : 0;
}

static int pool_alloc(rp_checks *c, const tf_event *e, rp_finding *v)
{
    pool_state *p = pool_of(c, e->u.pool.pool);
    uint64_t ptr = e->u.pool.ptr;
    uint64_t size = e->u.pool.granted ? e->u.pool.granted : e->u.pool.requested;
    if (!ptr)
        return 0;  /* a zero-byte request: nothing handed out */
    if (!size) {
        /* A zero-byte block at a real address: it overlaps nothing. */
        uint64_t *n = rp_ptrmap_get(&p->zeros, ptr);
        if (n)
            ++*n;
        else
            rp_ptrmap_put(&p->zeros, ptr, 1);
        p->fig.blocks++;
        return 0;
    }
    uint64_t end = ptr + size, marks = 0;
    rp_rangeset_pos pos;
    rp_range *at = rp_rangeset_before_pos(&p->blocks.mem, end - 1, ptr, &pos);
    if (at && at->start == ptr && end <= at->end && (at->val & (FREED | IN_SEG)) == (FREED | IN_SEG)) {
        marks = IN_SEG;   /* again inside a freed block, and so inside its segment */
    } else if (p->seen_segments && !p->partial) {
        __typeof__(p->seg_cache[0]) *c = &p->seg_cache[(ptr >> 16) % SEG_CACHE];
        if (!(ptr >= c->lo && ptr + size <= c->hi)) {
            const rp_range *s = rp_rangeset_find(&p->segs, ptr), *n;
            /* Segments back to back are one range of memory for a block (the
             * mappings of PyTorch's expandable segments). */
            uint64_t span = s ? s->end : 0;
            while (s && span < ptr + size && (n = rp_rangeset_find(&p->segs, span)) != NULL && n->start == span)
                span = n->end;
            if (!s || ptr + size > span)
                return report(v, "outside_segment", site_of(e), s ? site_of_range(s) : (rp_site){0, 0, 0, 0},
                              "pool %u handed out [0x%llx, 0x%llx), which is not inside any segment it obtained",
                              e->u.pool.pool, ULL(ptr), ULL(ptr + size));
            c->lo = s->start;
            c->hi = span;
        }
        marks = IN_SEG;
    }
    if (space_alloc(&p->blocks, at, &pos, e, ptr, end, marks, v)) {
        snprintf(v->message + strlen(v->message), sizeof v->message - strlen(v->message), " (pool %u)",
                 e->u.pool.pool);
        return 1;
    }
    p->fig.allocated += size;
    p->fig.blocks++;
    note_peak(p);
    return 0;
}

static int pool_free(rp_checks *c, const tf_event *e, rp_finding *v)
{
    pool_state *p = pool_of(c, e->u.pool.pool);
    uint64_t size;
    if (!e->u.pool.ptr)
        return 0;
    uint64_t *zeros = p->zeros.len ? rp_ptrmap_get(&p->zeros, e->u.pool.ptr) : NULL;
    if (zeros) {
        /* Zero-byte blocks there: a live block starting there is freed
         * first (a free says no size it can be told by), so that its
         * address is never taken as still live once the pool may hand it
         * out again; the zero-byte block's own free then comes with none
         * live, and takes one of them. */
        const rp_range *r = rp_rangeset_before(&p->blocks.mem, e->u.pool.ptr);
        if (!r || r->start != e->u.pool.ptr || is_freed(r)) {
            if (!--*zeros)
                rp_ptrmap_del(&p->zeros, e->u.pool.ptr, NULL);
            p->fig.blocks--;
            return 0;
        }
    }
    if (space_free_ptr(&p->blocks, e, e->u.pool.ptr, 1, &size, v))
        return 1;
    p->fig.allocated -= size;
    p->fig.blocks--;
    return 0;
}

/* The release at seq failed: what it erased is live again. */
static void release_failed(rp_checks *c, uint64_t seq)
{
    const uint64_t *at = seq ? rp_ptrmap_get(&c->undo_at, seq) : NULL;
    if (!at)
        return;  /* it erased nothing (a bad free, already reported), or the log lost it */
    size_t i = (size_t)*at;
    undo *u = &c->undos[i];
    space *s = &c->sp[u->sp];
    if (u->block.end > u->block.start) {
        rp_range *r = rp_rangeset_before(&s->mem, u->block.start), clash;
        if (r && r->start == u->block.start && is_freed(r) && seq_of(r) == (u->seq & SEQ_MASK)) {
            r->val = u->block.val;   /* the mark its release left, taken back */
            r->aux = u->block.aux;
            if (!is_freed(r))
                count_live(s, r, 1);   /* (a block a teardown took stays so) */
        } else if (!is_freed(&u->block)) {
            /* Memory handed out over it since stays with its new owner. */
            claim(s, u->block.start, u->block.end, u->block.val, u->block.aux, 0, &clash);
        }
    }
    if (u->handle_ref) {
        uint64_t *refs = rp_ptrmap_get(&c->handle_refs, u->handle_ref);
        if (refs)
            ++*refs;
        else
            rp_ptrmap_put(&c->handle_refs, u->handle_ref, 1);
    }
    if (u->seg_pool) {
        pool_state *p = pool_of(c, u->seg_pool);
        rp_rangeset_insert(&p->segs, u->seg.start, u->seg.end, u->seg.val, u->seg.aux);
        rp_ptrmap_put(&c->seg_owner, u->seg.start, u->seg_pool);
        p->fig.reserved += seg_bytes(&u->seg);
        p->fig.segments += seg_count(&u->seg);
    }
    undo_drop(c, i);
}

int rp_checks_event(rp_checks *c, const tf_event *e, uint32_t owner_pool, rp_finding *v)
{
    uint64_t size;
    /* The one gate: a kind handled below and left out of RP_CHECKS_KINDS
     * would be skipped by the callers that ask rp_checks_wants first. */
    if (!rp_checks_wants(e))
        return 0;
    c->nunseen = 0;
    switch (e->kind) {
    case TF_EV_CUDA_ALLOC:
    case TF_EV_CUDA_FREE:
        return cuda_event(c, e, owner_pool, v);
    case TF_EV_POOL_ALLOC:
        return pool_alloc(c, e, v);
    case TF_EV_POOL_FREE:
        return pool_free(c, e, v);
    case TF_EV_POOL_SEGMENT:
        if (e->u.segment.grow == TF_SEGMENT_GROW) {
            segment_grow(c, e->u.segment.pool, e, e->u.segment.ptr, e->u.segment.size, 0);
            /* A segment the pool obtained outside its operations (a
             * cudaMalloc before op_begin, or one it was handed): the device
             * allocation starting there is its segment, as one nested in
             * its operation is, unless another pool's already. */
            if (e->u.segment.ptr && handle_live(&c->sp[TF_SPACE_DEVICE], e->u.segment.ptr) &&
                !rp_ptrmap_get(&c->seg_owner, e->u.segment.ptr))
                rp_ptrmap_put(&c->seg_owner, e->u.segment.ptr, e->u.segment.pool);
            return 0;
        }
        return segment_release(c, e->u.segment.pool, e, e->u.segment.ptr, e->u.segment.size, v);
    case TF_EV_HOST_ALLOC:
        return e->u.host.ptr ? host_alloc(&c->sp[SP_HOST], e) : 0;
    case TF_EV_HOST_FREE: {
        /* Only large buffers are recorded: a free of one we did not see
         * allocated is normal, so only double frees count. */
        if (!e->u.host.ptr)
            return 0;
        rp_range block;
        if (space_free_block(&c->sp[SP_HOST], e, e->u.host.ptr, 0, &size, &block, v))
            return 1;
        if (block.end > block.start)
            undo_note(c, e, SP_HOST, &block);
        return 0;
    }
    case TF_EV_RELEASE_FAILED:
        release_failed(c, e->u.release_failed.release);
        return 0;
    default:
        return 0;
    }
}

typedef struct leak_walk {
    rp_checks *c;
    const char *what;
    rp_ptrmap *skip;        /* device allocations that are pool segments */
} leak_walk;

static int leak_one(const rp_range *r, void *arg)
{
    leak_walk *w = arg;
    if (is_freed(r))
        return 0;
    if (w->skip && rp_ptrmap_get(w->skip, r->start))
        return 0;  /* a pool's cached segment: its blocks are reported instead */
    rp_finding *f = warning(w->c);
    if (f)
        report(f, "live_at_end", site_of_range(r), (rp_site){0, 0, 0, 0},
               "%s: [0x%llx, 0x%llx) (%llu bytes) still live at the end, allocated at seq %llu", w->what,
               ULL(r->start), ULL(r->end), ULL(r->end - r->start), ULL(seq_of(r)));
    return 0;
}

void rp_checks_end(rp_checks *c)
{
    char name[64];
    for (size_t i = 0; i < c->npools; i++) {
        snprintf(name, sizeof name, "pool %u", c->pools[i].id);
        leak_walk w = {c, name, NULL};
        rp_rangeset_walk(&c->pools[i].blocks.mem, leak_one, &w);
    }
    leak_walk w = {c, space_names[TF_SPACE_DEVICE], &c->seg_owner};
    rp_rangeset_walk(&c->sp[TF_SPACE_DEVICE].mem, leak_one, &w);
}

uint32_t rp_checks_warnings(const rp_checks *c, const rp_finding **list, uint64_t *total)
{
    *list = c->warn;
    *total = c->total_warn;
    return c->nwarn;
}

rp_pool_figures rp_checks_pool(const rp_checks *c, uint32_t pool)
{
    rp_pool_figures zero = {0};
    const pool_state *p = pool_find(c, pool);
    return p ? p->fig : zero;
}

uint64_t rp_checks_device_live(const rp_checks *c) { return c->sp[TF_SPACE_DEVICE].live_bytes; }

size_t rp_checks_gone(const rp_checks *c, const uint64_t **starts)
{
    *starts = c->gone;
    return c->ngone;
}

/* ------------------------------------------------------------ checkpoints */

/* A space as it is (its name is constant data: not saved, set again). */
static void space_save(const space *s, rp_state_w *w)
{
    rp_state_put(w, s, sizeof *s);
    rp_state_rangeset(w, &s->mem);
    rp_state_ptrmap(w, &s->stale);
    rp_state_array(w, s->pending, s->npending, sizeof *s->pending);
}

/* Into a space fresh from space_init. */
static void space_load(space *s, const char *name, rp_state_r *r)
{
    space_free(s);
    rp_state_get(r, s, sizeof *s);
    s->name = name;
    rp_rangeset_init(&s->mem);
    rp_ptrmap_init(&s->stale);
    size_t cap = s->cappending;
    s->pending = s->scratch = NULL;
    s->npending = s->cappending = 0;
    rp_state_get_rangeset(r, &s->mem);
    rp_state_get_ptrmap(r, &s->stale);
    size_t n;
    rp_ptrmap_slot *pending = rp_state_get_array(r, &n, sizeof *pending);
    if (cap && n <= cap && cap <= (1u << 30)) {
        /* A batch is cappending long (stale_put fills one to the end). */
        s->pending = rp_xmalloc(cap * sizeof *s->pending);
        s->scratch = rp_xmalloc(cap * sizeof *s->scratch);
        if (n)
            memcpy(s->pending, pending, n * sizeof *pending);
        s->npending = n;
        s->cappending = cap;
    } else if (n) {
        r->bad = 1;
    }
    free(pending);
}

size_t rp_checks_unseen(const rp_checks *c, const uint64_t **starts)
{
    *starts = c->unseen;
    return c->nunseen;
}

void rp_checks_pool_holds_by_reference(rp_checks *c, uint32_t pool)
{
    pool_of(c, pool)->by_reference = 1;
}

void rp_checks_save(const rp_checks *c, rp_state_w *w)
{
    rp_state_put(w, c, sizeof *c);
    for (int i = 0; i < SP_COUNT; i++)
        space_save(&c->sp[i], w);
    rp_state_u64(w, c->npools);
    for (size_t i = 0; i < c->npools; i++) {
        const pool_state *p = &c->pools[i];
        rp_state_put(w, p, sizeof *p);
        space_save(&p->blocks, w);
        rp_state_rangeset(w, &p->segs);
        rp_state_ptrmap(w, &p->zeros);
    }
    rp_state_ptrmap(w, &c->pool_index);
    rp_state_ptrmap(w, &c->seg_owner);
    rp_state_ptrmap(w, &c->handle_refs);
    rp_state_ptrmap(w, &c->block_dev);
    rp_state_array(w, c->undos, c->nundo, sizeof *c->undos);
}

int rp_checks_load(rp_checks *c, rp_state_r *r)
{
    /* Emptied to what rp_checks_new makes, then filled. */
    rp_checks saved;
    rp_state_get(r, &saved, sizeof saved);
    if (r->bad)
        return -1;
    memcpy(c->warn, saved.warn, sizeof c->warn);
    c->nwarn = saved.nwarn;
    c->total_warn = saved.total_warn;
    c->partial = saved.partial;
    for (int i = 0; i < SP_COUNT; i++)
        space_load(&c->sp[i], space_names[i], r);
    uint64_t npools = rp_state_get_u64(r);
    if (r->bad || npools > (uint64_t)(r->end - r->p) / sizeof(pool_state))
        return -1;
    for (uint64_t i = 0; i < npools; i++) {
        pool_state saved_pool;
        if (rp_state_get(r, &saved_pool, sizeof saved_pool) < 0)
            return -1;
        pool_state *p = pool_of(c, saved_pool.id);
        space blocks = p->blocks;   /* fresh from pool_of, its buffers kept */
        rp_rangeset segs = p->segs;
        rp_ptrmap zeros = p->zeros;
        *p = saved_pool;
        p->blocks = blocks;
        p->segs = segs;
        p->zeros = zeros;
        space_load(&p->blocks, "pool blocks", r);
        rp_state_get_rangeset(r, &p->segs);
        rp_state_get_ptrmap(r, &p->zeros);
    }
    rp_state_get_ptrmap(r, &c->pool_index);
    rp_state_get_ptrmap(r, &c->seg_owner);
    rp_state_get_ptrmap(r, &c->handle_refs);
    rp_state_get_ptrmap(r, &c->block_dev);
    /* The pending releases; their two maps are made again from them. */
    size_t nundo;
    undo *undos = rp_state_get_array(r, &nundo, sizeof *undos);
    for (size_t i = 0; i < nundo && !r->bad; i++) {
        if (undos[i].sp < 0 || undos[i].sp >= SP_COUNT) {
            r->bad = 1;   /* not what save wrote */
            break;
        }
        undo *u = undo_note(c, &(tf_event){.seq = undos[i].seq, .tid = undos[i].tid}, undos[i].sp, &undos[i].block);
        u->seg_pool = undos[i].seg_pool;
        u->seg = undos[i].seg;
        u->handle_ref = undos[i].handle_ref;
    }
    free(undos);
    if (c->npools != npools || saved.last_pool >= (npools ? npools : 1))   /* not what save wrote */
        r->bad = 1;
    else
        c->last_pool = saved.last_pool;
    return r->bad ? -1 : 0;
}

/* aux: a range's stack ids, native << 32 | python. */
static uint64_t map_aux(uint64_t aux, const rp_stack_map *m)
{
    return (uint64_t)rp_map_native(m, (uint32_t)(aux >> 32)) << 32 | rp_map_py(m, (uint32_t)aux);
}

static int map_range(rp_range *r, void *arg)
{
    r->aux = map_aux(r->aux, arg);
    return 0;
}

void rp_checks_map_stacks(rp_checks *c, const rp_stack_map *m)
{
    rp_stack_map *arg = (rp_stack_map *)m;
    for (int i = 0; i < SP_COUNT; i++)
        rp_rangeset_walk_range(&c->sp[i].mem, 0, UINT64_MAX, map_range, arg);
    for (size_t i = 0; i < c->npools; i++) {
        rp_rangeset_walk_range(&c->pools[i].blocks.mem, 0, UINT64_MAX, map_range, arg);
        rp_rangeset_walk_range(&c->pools[i].segs, 0, UINT64_MAX, map_range, arg);
    }
    for (size_t i = 0; i < c->nundo; i++) {
        c->undos[i].block.aux = map_aux(c->undos[i].block.aux, m);
        c->undos[i].seg.aux = map_aux(c->undos[i].seg.aux, m);
    }
    for (uint32_t i = 0; i < c->nwarn; i++) {
        rp_site_map(&c->warn[i].at, m);
        rp_site_map(&c->warn[i].other, m);
    }
}
