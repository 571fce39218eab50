/*
 * replay.c - the check driver: log events -> checks and pool models.
 *
 * The walker (walk.c) says where each event is nested; this file decides
 * what a model sees and when.  A top-level operation of a modelled pool is
 * gathered, with everything nested in it, until its frame closes; the
 * operations nested in it form a tree as they arrive (gather_event), and
 * the whole runs through the model at once (apply_top) so that the nested
 * ones can be delivered where the model says the real code could have run a
 * collection (deliver, runs_here: the delivery points).
 *
 * Two kinds of run go through the same code: the replay of record, which
 * keeps the address maps and the fidelity counts, and explore's trials
 * (rp_replay_trial), which run the pending operation on a scratch copy of
 * the model, change nothing of the replay, and have hosts of their own.
 */
#include "replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"
#include "placement.h"
#include "ptrmap.h"
#include "rangeset.h"
#include "state.h"
#include "xalloc.h"

/* Synthetic segment addresses, for growth the log does not show: far from
 * anything a real device hands out, so they cannot collide with recorded ones. */
#define SYNTH_BASE 0x7e0000000000ULL
#define SYNTH_ALIGN (2ULL << 20)
/* Frames of a collection's stack read to place it. */
#define RP_PLACE_FRAMES 64

/* Operations nested deeper than this stay plain events of the one around
 * them (deeper than any recorder nests), so a hostile log cannot exhaust
 * the stack of apply_node. */
#define MAX_DEPTH 64

/* A pool operation inside a gathered buffer, and the operations nested in it. */
typedef struct node {
    uint32_t begin, end;       /* buffer indices: [begin, end) */
    uint32_t child, sibling, last_child;
    uint32_t gc;               /* index of the collection it ran in, RP_NIL */
    int placed;                /* place of that collection worked out */
    rp_placement place;
} node;

/* A top-level operation and everything nested in it, in seq order. */
typedef struct gathered {
    tf_event *buf;
    size_t nbuf, capbuf;
    node *nodes;               /* node 0: the operation itself */
    size_t nnodes, capnodes;
} gathered;

typedef struct thread {
    gathered g;
    uint64_t capture;          /* seq of the gathered operation, 0 when none */
    uint32_t *open;            /* nodes whose frames are open, innermost last */
    size_t nopen, capopen;
} thread;

typedef struct pool {
    uint32_t id;
    int selected;
    const rp_model_ops *ops;   /* NULL: model-free checks only */
    int broken;                /* keep_going: the model left the pool's state */
    int driven;                /* the model has been given an operation or a release */
    void *m, *scratch;
    rp_ptrmap xlat;            /* recorded block address -> model address */
    rp_ptrmap segx;            /* recorded segment base -> model segment base */
    rp_rangeset msegs;         /* the model's segments */
    /* Segments the log shows the pool obtaining outside any operation (an
     * imported snapshot's state before its first entry), oldest first: the
     * model's next request for a segment that its own operation does not
     * show takes the oldest. */
    struct { uint64_t ptr, size; } *loose;
    size_t nloose, caploose, loose_first;
} pool;

/* A trial in progress: explore's (th: what it injects and hears), or one
 * placing an ambiguous collection (th NULL: the violation kept in found). */
typedef struct trial {
    const rp_trial_host *th;
    int point, seen, broke;
    int left_log;              /* the model chose what the log says the pool did not */
    int inside;                /* a shadow's: collections no stack places run at the first point */
    const char *where;
    rp_finding found;
} trial;

/* An alternative history: the model with a collection no stack placed run
 * at a point inside its operation instead of after it, and every later one
 * no stack places at the first point of its operation (the worst case),
 * followed through the rest of the log while it chooses what the real pool
 * chose (follow_shadow), until an invariant breaks there (an ambiguity: the
 * replay of record goes on) or it leaves the log. */
typedef struct shadow {
    struct pool *p;            /* NULL: none running */
    void *m;
    uint64_t gc, op;           /* the collection, its operation */
    const char *where;         /* the point it was run at */
    uint64_t later;            /* collections no stack placed it has run inside since */
} shadow;

/* One operation being applied to a model. */
typedef struct hctx {
    rp_replay *r;
    pool *p;
    void *m;
    const gathered *g;         /* NULL outside any operation */
    uint32_t node;             /* RP_NIL for an injected free */
    uint32_t next_child;
    uint32_t seg_cursor;
    struct hctx *up;
    rp_host host;
    const tf_event *ev;        /* outside any operation: the event itself */
    trial *tr;                 /* NULL: the replay of record */
} hctx;

struct rp_replay {
    rp_options o;
    rp_checks *checks;
    rp_walk *walk;                 /* rp_replay_event's own, when nobody else feeds */
    thread *th;
    size_t nth, capth;
    rp_ptrmap th_index;            /* tid -> position in th */
    uint32_t last_tid;             /* the thread found last, and where */
    size_t last_th;
    pool *pools;
    size_t npools, cappools;
    rp_ptrmap pool_index;          /* pool id -> position in pools */
    size_t last_pool;              /* the pool found last */
    size_t nmodelled;              /* pools with a model: none, and the models are left out */
    gathered bare;                 /* a bare pool event, as a one-event operation */
    rp_result res;
    size_t capseries;
    int stopped;
    uint64_t stopped_at;           /* the event being handled when it stopped */
    uint64_t synth_next;
    uint64_t model_peak_reserved, model_peak_allocated;
    rp_reentry re[RP_MAX_NESTED];  /* re-entries of the current top-level op */
    uint32_t nre;
    uint64_t last_segments;
    rp_probe_hook hook;
    void *hook_ctx;
    const gathered *pending;       /* the operation a probe hook may try */
    pool *pending_pool;
    pool *audit_pool;              /* the model that broke, for audit_step */
    void *audit_m;
    uint8_t *used;                 /* per event of the operation being applied:
                                    * a release a model's own matched */
    size_t capused;
    uint64_t unplaced, first_unplaced; /* nested collections no stack placed */
    /* A collection placed by exploration (ambiguous_child): it runs at the
     * force_at-th point the top-level operation reaches (-1: after it). */
    uint32_t force_child;
    int force_at, force_seen;
    const char *force_where;
    uint64_t explored;                 /* collections explored (explore_placement) */
    shadow sh;
    int models_off;                /* history lost: no pool has a model from here */
};

static int apply_node(rp_replay *r, pool *p, void *m, const gathered *g, uint32_t nid, int nested, hctx *up,
                      trial *tr);
static const rp_host record_host, trial_host;
static hctx context(rp_replay *r, pool *p, void *m, const gathered *g, uint32_t nid, hctx *up, trial *tr,
                    const tf_event *ev);
static int would_reenter(const pool *p, const gathered *g);
static void end_shadow(rp_replay *r);

/* ------------------------------------------------------------------ setup */

static void gathered_free(gathered *g)
{
    free(g->buf);
    free(g->nodes);
}

static int driver_event(void *ctx, const tf_event *e, const rp_where *w);
static void driver_closed(void *ctx, const rp_frame *f, rp_close how, const tf_event *by);

rp_replay *rp_replay_new(const rp_options *o)
{
    rp_replay *r = rp_xcalloc(1, sizeof *r);
    r->o = *o;
    r->checks = rp_checks_new();
    r->synth_next = SYNTH_BASE;
    r->force_child = RP_NIL;
    rp_ptrmap_init(&r->th_index);
    rp_ptrmap_init(&r->pool_index);
    return r;
}

void rp_replay_attach(rp_replay *r, rp_walk *w)
{
    rp_subscriber driver = {r, driver_event, driver_closed};
    rp_walk_subscribe(w, &driver);
}

void rp_replay_free(rp_replay *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nth; i++) {
        gathered_free(&r->th[i].g);
        free(r->th[i].open);
    }
    end_shadow(r);
    for (size_t i = 0; i < r->npools; i++) {
        pool *p = &r->pools[i];
        if (p->ops) {
            p->ops->destroy(p->m);
            if (p->scratch)
                p->ops->destroy(p->scratch);
        }
        rp_ptrmap_free(&p->xlat);
        rp_ptrmap_free(&p->segx);
        rp_rangeset_free(&p->msegs);
        free(p->loose);
    }
    free(r->th);
    rp_ptrmap_free(&r->th_index);
    free(r->pools);
    rp_ptrmap_free(&r->pool_index);
    gathered_free(&r->bare);
    free(r->used);
    free(r->res.series);
    rp_checks_free(r->checks);
    rp_walk_free(r->walk);
    free(r);
}

static thread *thread_of(rp_replay *r, uint32_t tid)
{
    if (r->nth && r->last_tid == tid)
        return &r->th[r->last_th];
    uint64_t *at = rp_ptrmap_get(&r->th_index, tid);
    if (at) {
        r->last_tid = tid;
        r->last_th = (size_t)*at;
        return &r->th[*at];
    }
    rp_grow(&r->th, &r->capth, r->nth + 1, sizeof *r->th);
    memset(&r->th[r->nth], 0, sizeof *r->th);
    rp_ptrmap_put(&r->th_index, tid, r->nth);
    return &r->th[r->nth++];
}

static const char *setting_of(void *ctx, const char *key)
{
    const rp_replay *r = ctx;
    return r->o.setting ? r->o.setting(r->o.setting_ctx, key) : NULL;
}

/* A pool named "cupy" is CuPy's default pool: which model follows it
 * depends on CuPy's version, when the log has it. */
static const rp_model_ops *cupy_by_version(rp_replay *r)
{
    const char *v = setting_of(r, "cupy_version");
    int major, minor;
    if (!v || sscanf(v, "%d.%d", &major, &minor) != 2)
        return &rp_model_cupy;
    if (major == 5 && minor <= 3)
        return &rp_model_cupy5;
    if (major > 14 || (major == 14 && minor >= 1))
        return &rp_model_cupy_next;
    return &rp_model_cupy;
}

static const rp_model_ops *model_by_name(rp_replay *r, const char *name)
{
    static const struct { const char *word; const rp_model_ops *ops; } guess[] = {
        {"cupy5", &rp_model_cupy5}, {"cupy", &rp_model_cupy}, {"torch", &rp_model_torch}, {"bfc", &rp_model_tf_bfc},
        {"tensorflow", &rp_model_tf_bfc}, {"xla", &rp_model_tf_bfc},
    };
    for (size_t i = 0; name && i < sizeof guess / sizeof *guess; i++)
        if (strstr(name, guess[i].word))
            return guess[i].ops == &rp_model_cupy ? cupy_by_version(r) : guess[i].ops;
    return NULL;
}

static int pool_selected(const rp_options *o, uint32_t id, const char *name)
{
    if (!o->pool)
        return 1;
    char *end;
    unsigned long n = strtoul(o->pool, &end, 10);
    if (*o->pool && !*end)
        return n == id;
    return name && !strcmp(name, o->pool);
}

/* The options the run used, as far as the log has told them. */
static void configure_pool(rp_replay *r, pool *p)
{
    if (!p->ops->configure)
        return;
    hctx h = context(r, p, p->m, NULL, RP_NIL, NULL, NULL, NULL);
    h.host.ctx = &h;
    rp_settings set = {setting_of, r};
    p->ops->configure(p->m, &set, &h.host);
}

/* Found through a map: a log can name any number of pools. */
static pool *pool_lookup(rp_replay *r, uint32_t id)
{
    uint64_t *at = rp_ptrmap_get(&r->pool_index, id);
    if (at) {
        r->last_pool = (size_t)*at;
        return &r->pools[*at];
    }
    rp_grow(&r->pools, &r->cappools, r->npools + 1, sizeof *r->pools);
    rp_ptrmap_put(&r->pool_index, id, r->npools);
    pool *p = &r->pools[r->npools++];
    memset(p, 0, sizeof *p);
    p->id = id;
    const char *name = r->o.pool_name ? r->o.pool_name(r->o.pool_name_ctx, id) : NULL;
    p->selected = pool_selected(&r->o, id, name);
    /* CuPy's pools (the hook names them cupy, cupy device N): a chunk
     * holds its segment's Memory by reference. */
    if (name && !strncmp(name, "cupy", 4))
        rp_checks_pool_holds_by_reference(r->checks, id);
    p->ops = !p->selected || r->models_off ? NULL
             : r->o.model          ? r->o.model
             : r->o.model_auto     ? model_by_name(r, name)
                                   : NULL;
    rp_ptrmap_init(&p->xlat);
    rp_ptrmap_init(&p->segx);
    rp_rangeset_init(&p->msegs);
    if (p->ops) {
        p->m = p->ops->create();
        r->nmodelled++;
        configure_pool(r, p);
    }
    return p;
}

/* Before the model's first piece of work: configured again, from the
 * options as the log has told them by now.  The pool appears at its first
 * pool_op_begin, but the recorder writes the allocator settings (INFO
 * env:NAME) at the process's first device allocation, which for CuPy is
 * inside that first operation: configured only at the pool's appearance,
 * the model never saw CUPY_GPU_MEMORY_LIMIT. */
static void drive_pool(rp_replay *r, pool *p)
{
    if (p->driven)
        return;
    p->driven = 1;
    if (p->ops && !p->broken)
        configure_pool(r, p);
}

/* Events of one pool come in runs: the pool of the last one, without a
 * call. */
static inline pool *pool_of(rp_replay *r, uint32_t id)
{
    if (r->npools && r->pools[r->last_pool].id == id)
        return &r->pools[r->last_pool];
    return pool_lookup(r, id);
}

static pool *modelled(rp_replay *r, uint32_t id)
{
    pool *p = pool_of(r, id);
    return p->ops && !p->broken ? p : NULL;
}

/* --------------------------------------------------------------- events */

static int is_bare(const tf_event *e)
{
    return e->kind == TF_EV_POOL_ALLOC || e->kind == TF_EV_POOL_FREE;
}

static uint32_t pool_id_of(const tf_event *e)
{
    return e->kind == TF_EV_POOL_OP_BEGIN ? e->u.pool_op.pool : e->u.pool.pool;
}

static rp_opref opref_of(const tf_event *e)
{
    rp_opref o = {e->seq, e->kind, 0, pool_id_of(e), 0};
    if (e->kind == TF_EV_POOL_OP_BEGIN) {
        o.op = e->u.pool_op.op;
        o.arg = e->u.pool_op.arg;
    } else if (e->kind == TF_EV_GC_START) {
        o.pool = 0;
    } else {
        o.arg = e->u.pool.ptr;
    }
    return o;
}

/* The pool_alloc / pool_free that says what the operation did, or RP_NIL. */
static uint32_t result_of(const gathered *g, uint32_t nid)
{
    const node *nd = &g->nodes[nid];
    const tf_event *b = &g->buf[nd->begin];
    if (b->kind != TF_EV_POOL_OP_BEGIN)
        return nd->begin;
    for (uint32_t j = nd->begin + 1; j < nd->end; j++)
        if (g->buf[j].parent == b->seq && is_bare(&g->buf[j]) && g->buf[j].u.pool.pool == b->u.pool_op.pool)
            return j;
    return RP_NIL;
}

static rp_site site_of(const tf_event *e)
{
    return (rp_site){e->seq, e->tid, e->native_stack, e->py_stack};
}

static rp_site site_at(const gathered *g, uint32_t nid)
{
    uint32_t i = result_of(g, nid);
    return site_of(&g->buf[i == RP_NIL ? g->nodes[nid].begin : i]);
}

/* The model's segments: device memory a pool operation obtained from CUDA. */
static int is_device_alloc(const tf_event *e)
{
    return e->kind == TF_EV_CUDA_ALLOC && tf_api_space(e->u.cuda.api) == TF_SPACE_DEVICE;
}

/* -------------------------------------------------------- model services */

/* The model's state left the real pool's at this event (the first one is
 * where to look). */
static void diverge(rp_replay *r, uint64_t seq)
{
    if (!r->res.diverged++)
        r->res.first_diverged_seq = seq;
}

/* The event an operation context stands for. */
static uint64_t seq_of(const hctx *h)
{
    return h->node != RP_NIL ? h->g->buf[h->g->nodes[h->node].begin].seq : h->ev ? h->ev->seq : 0;
}

static hctx *root_of(hctx *h)
{
    while (h->up)
        h = h->up;
    return h;
}

static rp_site site_of_ctx(hctx *h)
{
    hctx *root = root_of(h);
    if (root->node != RP_NIL)
        return site_at(root->g, root->node);
    return root->ev ? site_of(root->ev) : (rp_site){0, 0, 0, 0};
}

static void deliver(hctx *h, const char *point);

static uint64_t synth_segment(rp_replay *r, uint64_t size)
{
    uint64_t base = r->synth_next;
    r->synth_next += (size + SYNTH_ALIGN - 1) / SYNTH_ALIGN * SYNTH_ALIGN + SYNTH_ALIGN;
    return base;
}

/* The operation's next device allocation attempt in the log, from the
 * event after the last one taken: *found 0 when there is none left (*any:
 * whether the operation shows any at all), *refused 1 when the device said
 * it had no memory, 2 when it failed otherwise.  An operation that shows
 * none takes a segment obtained outside any operation (see below). */
static void next_attempt(hctx *h, uint64_t *rec, uint64_t *rec_size, int *found, int *refused, int *any)
{
    *rec = *rec_size = 0;
    *found = *any = 0;
    *refused = 0;
    if (h->node == RP_NIL)
        return;
    const node *nd = &h->g->nodes[h->node];
    uint64_t seq = h->g->buf[nd->begin].seq;
    for (uint32_t j = nd->begin + 1; j < nd->end && !*found; j++) {
        const tf_event *e = &h->g->buf[j];
        int grow = e->kind == TF_EV_POOL_SEGMENT && e->u.segment.grow == TF_SEGMENT_GROW;
        if (e->parent != seq || !(is_device_alloc(e) || grow))
            continue;
        *any = 1;
        if (j < h->seg_cursor)
            continue;
        *found = 1;
        h->seg_cursor = j + 1;
        *rec = grow ? e->u.segment.ptr : e->u.cuda.ptr;
        *rec_size = grow ? e->u.segment.size : e->u.cuda.size;
        /* 2: cudaErrorMemoryAllocation and CUDA_ERROR_OUT_OF_MEMORY alike. */
        *refused = grow ? 0 : e->u.cuda.result == 2 ? 1 : e->u.cuda.result || !e->u.cuda.ptr ? 2 : 0;
    }
    /* An operation that shows no attempt of its own takes the oldest
     * segment the pool obtained outside any operation (an imported
     * snapshot's state before its first entry) that no request took yet;
     * a trial only looks. */
    pool *p = h->p;
    if (!*any && p->loose_first < p->nloose) {
        *found = 1;
        *rec = p->loose[p->loose_first].ptr;
        *rec_size = p->loose[p->loose_first].size;
        if (!h->tr)
            p->loose_first++;
    }
}

/* Where a segment the model asks for goes: where the model says (a mapping
 * it places), else the recorded one when it is big enough and free in the
 * model, else the hint, else a synthetic one. */
static uint64_t place_segment(hctx *h, uint64_t rec, uint64_t rec_size, uint64_t size, uint64_t at)
{
    if (at)
        return at;
    uint64_t base = rec && rec_size >= size ? rec : h->host.hint;
    if (!base || rp_rangeset_overlap(&h->p->msegs, base, base + size))
        base = synth_segment(h->r, size);
    return base;
}

/* The model asks the device for memory: that is the operation's next
 * device allocation attempt in the log, refused or not (a model's
 * out-of-memory ladder meets the refusals the real pool met).  The
 * prediction matched when the sizes (and, for a mapping the model places,
 * the addresses) agree.  count: the replay of record; a trial counts
 * nothing. */
static uint64_t ask_segment(hctx *h, uint64_t *sizep, uint64_t at, int count)
{
    rp_replay *r = h->r;
    uint64_t size = *sizep, rec, rec_size;
    int found, refused, any;
    next_attempt(h, &rec, &rec_size, &found, &refused, &any);
    if (!size) {
        /* The model learns the size from the log: nothing to match. */
        *sizep = found ? rec_size : 0;
        if (!found || refused)
            return 0;
        size = rec_size;
    } else if (found && refused) {
        if (count && rec_size == size)
            r->res.matched++;
        else if (count)
            diverge(r, seq_of(h));
        else if (rec_size != size && h->tr)
            h->tr->left_log = 1;
        if (refused == 2)
            *sizep = 0;  /* not for lack of memory: the pool raises, no ladder */
        return 0;
    } else if (!found && any) {
        if (count)
            diverge(r, seq_of(h));  /* the real pool did not ask again */
        else if (h->tr)
            h->tr->left_log = 1;
        return 0;
    } else if (count) {
        if (found && rec_size == size && (!at || rec == at))
            r->res.matched++;
        else
            diverge(r, seq_of(h));
    } else if (h->tr && !(found && rec_size == size && (!at || rec == at))) {
        h->tr->left_log = 1;
    }
    uint64_t base = place_segment(h, rec, rec_size, size, at);
    if (count) {
        rp_rangeset_insert(&h->p->msegs, base, base + size, rec, 0);
        rp_ptrmap_put(&h->p->segx, rec ? rec : base, base);
    }
    return base;
}

static uint64_t record_segment(void *ctx, uint64_t *size, uint64_t at) { return ask_segment(ctx, size, at, 1); }

static int is_release(const tf_event *e, uint64_t *ptr)
{
    if (e->kind == TF_EV_CUDA_FREE && e->u.cuda.ptr && !e->u.cuda.result) {
        *ptr = e->u.cuda.ptr;
        return 1;
    }
    if (e->kind == TF_EV_POOL_SEGMENT && e->u.segment.grow == TF_SEGMENT_RELEASE) {
        *ptr = e->u.segment.ptr;
        return 1;
    }
    return 0;
}

/* A release of the operation at buffer index j that a release_failed later
 * in the operation takes back (format 1.1: the release was recorded before
 * its call, which failed): it did not happen. */
static int release_taken_back(const gathered *g, const node *nd, uint32_t j)
{
    for (uint32_t k = j + 1; k < nd->end; k++)
        if (g->buf[k].kind == TF_EV_RELEASE_FAILED && g->buf[k].u.release_failed.release == g->buf[j].seq)
            return 1;
    return 0;
}

/* The model gave a segment back on its own: the log's release of it, among
 * the operation's releases not matched yet, in any order (CuPy drops a
 * slot's chunks in set order). */
static void record_released(void *ctx, uint64_t base, uint64_t size)
{
    hctx *h = ctx;
    rp_replay *r = h->r;
    (void)size;
    const rp_range *rg = rp_rangeset_find(&h->p->msegs, base);
    uint64_t rec = rg && rg->start == base && rg->val ? rg->val : base;
    int matched = 0;
    if (h->node != RP_NIL) {
        const node *nd = &h->g->nodes[h->node];
        uint64_t seq = h->g->buf[nd->begin].seq, ptr;
        for (uint32_t j = nd->begin + 1; j < nd->end && !matched; j++)
            if (h->g->buf[j].parent == seq && !r->used[j] && is_release(&h->g->buf[j], &ptr) && ptr == rec &&
                !release_taken_back(h->g, nd, j))
                r->used[j] = matched = 1;
    }
    if (matched)
        r->res.matched++;
    else
        diverge(r, seq_of(h));
    rp_rangeset_erase(&h->p->msegs, base, NULL);
    rp_ptrmap_del(&h->p->segx, rec, NULL);
}

/* A model's note about the run, once each. */
static void record_note(void *ctx, const char *text)
{
    hctx *h = ctx;
    rp_result *res = &h->r->res;
    for (uint32_t i = 0; i < res->nnotes; i++)
        if (!strcmp(res->notes[i].text, text))
            return;
    if (res->nnotes == RP_MAX_NOTES) {
        res->notes_dropped++;
        return;
    }
    snprintf(res->notes[res->nnotes++].text, sizeof res->notes[0].text, "%s", text);
}

/* One more invariant broken at the step the replay stopped at (each named once). */
static void add_broken(rp_result *res, const char *inv, const char *msg, int warning)
{
    for (uint32_t i = 0; i < res->nbroken; i++)
        if (!strcmp(res->broken[i].invariant, inv))
            return;
    if (res->nbroken == RP_MAX_BROKEN)
        return;
    rp_broken *b = &res->broken[res->nbroken++];
    snprintf(b->invariant, sizeof b->invariant, "%s", inv);
    snprintf(b->message, sizeof b->message, "%s", msg);
    b->warning = warning;
}

static void record_violation(rp_replay *r, rp_result *res, hctx *h, const char *inv, const char *msg)
{
    hctx *chain[RP_MAX_NESTED * 2];
    uint32_t n = 0;
    for (hctx *x = h; x && n < RP_MAX_NESTED * 2; x = x->up)
        if (x->node != RP_NIL)
            chain[n++] = x;
    hctx *root = n ? chain[n - 1] : h;
    memset(&res->violation, 0, sizeof res->violation);
    snprintf(res->violation.invariant, sizeof res->violation.invariant, "%s", inv);
    snprintf(res->violation.message, sizeof res->violation.message, "%s", msg);
    res->violation.at = n ? site_at(chain[0]->g, chain[0]->node) : h->ev ? site_of(h->ev) : (rp_site){0, 0, 0, 0};
    res->op = n ? opref_of(&root->g->buf[root->g->nodes[root->node].begin]) : (rp_opref){0, 0, 0, 0, 0};
    /* Enclosing operations and collections of the event, outermost first;
     * the top-level operation itself is "op". */
    res->nnested = 0;
    for (uint32_t i = n; i-- > 0;) {
        const node *nd = &chain[i]->g->nodes[chain[i]->node];
        if (i + 1 < n && nd->gc != RP_NIL && res->nnested < RP_MAX_NESTED)
            res->nested_in[res->nnested++] = opref_of(&chain[i]->g->buf[nd->gc]);
        if (i > 0 && res->nnested < RP_MAX_NESTED)
            res->nested_in[res->nnested++] = opref_of(&chain[i]->g->buf[nd->begin]);
    }
    memcpy(res->reentries, r->re, sizeof r->re);
    res->nreentries = r->nre;
    res->diverged_before_violation = res->diverged;
    res->violated = 1;
    res->by_model = 1;
    if (res != &r->res)
        res->nbroken = 0;   /* a later violation (keep_going): its own list, no audit */
    add_broken(res, inv, msg, 0);
    if (res == &r->res) {
        r->audit_pool = h->p;
        r->audit_m = h->m;
    }
}

static void record_violation_host(void *ctx, const char *inv, const char *msg)
{
    hctx *h = ctx;
    rp_replay *r = h->r;
    if (r->res.violated) {
        /* keep_going: a later violation, for whoever follows them. */
        if (r->o.on_violation) {
            rp_result later = r->res;
            record_violation(r, &later, h, inv, msg);
            r->o.on_violation(r->o.on_violation_ctx, &later);
        }
        h->p->broken = 1;
        return;
    }
    record_violation(r, &r->res, h, inv, msg);
    if (!r->o.keep_going)
        r->stopped = 1;
    else
        h->p->broken = 1;  /* the model's state is no longer the pool's */
    if (r->o.on_violation)
        r->o.on_violation(r->o.on_violation_ctx, &r->res);
}

static void record_warning(void *ctx, const char *inv, const char *msg)
{
    hctx *h = ctx;
    rp_finding w;
    memset(&w, 0, sizeof w);
    snprintf(w.invariant, sizeof w.invariant, "%s", inv);
    snprintf(w.message, sizeof w.message, "%s", msg);
    w.at = site_of_ctx(h);
    rp_checks_add_warning(h->r->checks, &w);
}

static void record_reenter(void *ctx, const char *point)
{
    hctx *h = ctx;
    if (!h->r->stopped)
        deliver(h, point);
}

/* ------------------------------------------------------------ step audit */

static void audit_violation(void *ctx, const char *inv, const char *msg)
{
    add_broken(ctx, inv, msg, 0);
}

static void audit_warning(void *ctx, const char *inv, const char *msg)
{
    add_broken(ctx, inv, msg, 1);
}

static void audit_reenter(void *ctx, const char *point)
{
    (void)ctx, (void)point;
}

static uint64_t audit_segment(void *ctx, uint64_t *size, uint64_t at)
{
    (void)ctx, (void)at;
    *size = 0;
    return 0;
}

/* A model broke an invariant: the first one found is the verdict, but one
 * corruption often breaks several (the audit that found it may see another
 * first): a full audit of the model as the step left it lists every one. */
static void audit_step(rp_replay *r)
{
    pool *p = r->audit_pool;
    r->audit_pool = NULL;
    if (!p || !p->ops)
        return;
    rp_host h = {.ctx = &r->res, .reenter = audit_reenter, .segment = audit_segment, .violation = audit_violation,
                 .warning = audit_warning, .audit_all = 1};
    p->ops->check(r->audit_m, 1, &h);
}

/* The replay of record: its segments, findings and re-entries count. */
static const rp_host record_host = {.reenter = record_reenter, .segment = record_segment,
                                    .released = record_released, .violation = record_violation_host,
                                    .warning = record_warning, .note = record_note};

/* ------------------------------------------------------------ trial hosts */

/* A trial's segment: placed like the replay's, counted nowhere. */
static uint64_t trial_segment(void *ctx, uint64_t *size, uint64_t at) { return ask_segment(ctx, size, at, 0); }

static void trial_violation(void *ctx, const char *inv, const char *msg)
{
    hctx *h = ctx;
    trial *tr = h->tr;
    if (tr->broke)
        return;
    tr->broke = 1;
    rp_finding f;
    memset(&f, 0, sizeof f);
    snprintf(f.invariant, sizeof f.invariant, "%s", inv);
    snprintf(f.message, sizeof f.message, "%s", msg);
    f.at = site_of_ctx(h);
    if (tr->th)
        tr->th->violation(tr->th->ctx, &f);
    else
        tr->found = f;
}

/* explore looks for violations only. */
static void trial_warning(void *ctx, const char *inv, const char *msg)
{
    (void)ctx, (void)inv, (void)msg;
}

/* At the point the trial is about (of the operation itself, not of one
 * nested in it), the caller injects its collection; then the nested
 * operations of this model's pool run as in the replay. */
static void trial_reenter(void *ctx, const char *point)
{
    hctx *h = ctx;
    trial *tr = h->tr;
    if (!h->up && tr->seen++ == tr->point && tr->th) {
        tr->where = point;
        tr->th->inject(tr->th->ctx, (rp_trial *)h);
    }
    deliver(h, point);
}

static const rp_host trial_host = {.reenter = trial_reenter, .segment = trial_segment, .violation = trial_violation,
                                   .warning = trial_warning};

void rp_trial_free(rp_trial *t, uint64_t recorded)
{
    hctx *h = (hctx *)t;
    if (h->tr->broke)
        return;
    uint64_t *mp = rp_ptrmap_get(&h->p->xlat, recorded);
    if (!mp)
        return;
    hctx inj = *h;
    inj.node = RP_NIL;
    inj.up = h;
    inj.host.ctx = &inj;
    h->p->ops->free(h->m, *mp, 1, &inj.host);
}

/* ------------------------------------------------------ delivery points */

typedef struct stack_query { rp_replay *r; uint32_t stack; } stack_query;

static int query_has(void *ctx, const char *key)
{
    stack_query *q = ctx;
    return q->r->o.stack_has(q->r->o.stack_ctx, q->stack, key);
}

/* Where the collection at buffer index gc started, by its native stack. */
static rp_placement place_collection(hctx *h, uint32_t gc)
{
    rp_replay *r = h->r;
    const rp_place *table = h->p->ops->places;
    uint32_t stack = gc != RP_NIL ? h->g->buf[gc].native_stack : 0;
    if (!table || !stack)
        return (rp_placement){RP_PLACED_UNKNOWN, NULL, NULL};
    if (r->o.stack_functions) {
        const char *names[RP_PLACE_FRAMES];
        uint32_t n = r->o.stack_functions(r->o.stack_ctx, stack, names, RP_PLACE_FRAMES);
        return rp_place_by_functions(table, names, n);
    }
    stack_query q = {r, stack};
    return r->o.stack_has ? rp_place_by_query(table, query_has, &q) : (rp_placement){RP_PLACED_UNKNOWN, NULL, NULL};
}

/* The same for nested operation c, worked out once. */
static rp_placement placement_of(hctx *h, uint32_t c)
{
    node *nd = &((gathered *)h->g)->nodes[c];
    if (!nd->placed) {
        nd->place = place_collection(h, nd->gc);
        nd->placed = 1;
    }
    return nd->place;
}

/* The operation's device allocation attempts around buffer index i: 1 when
 * one before it was made and one after it has not been asked for yet.  A
 * collection there ran in the pool's out-of-memory ladder, between two of
 * its attempts. */
static int between_attempts(hctx *h, uint32_t i)
{
    const node *nd = &h->g->nodes[h->node];
    uint64_t seq = h->g->buf[nd->begin].seq;
    int before = 0;
    for (uint32_t j = nd->begin + 1; j < nd->end; j++) {
        const tf_event *e = &h->g->buf[j];
        int attempt = e->parent == seq && (is_device_alloc(e) || (e->kind == TF_EV_POOL_SEGMENT &&
                                                                  e->u.segment.grow == TF_SEGMENT_GROW));
        if (!attempt)
            continue;
        if (j < i && j < h->seg_cursor)
            before = 1;
        else if (j > i)
            return before && j >= h->seg_cursor;
        else
            return 0;  /* an attempt before it the model has not made yet */
    }
    return 0;
}

/* Does nested operation c run at this point?  Only where its collection's
 * stack says it started, or (a stack that cannot tell) where the log's
 * order of device attempts puts it; anything else runs after the
 * operation: a collection is never put inside the bookkeeping on a guess,
 * which would report corruption that may not have happened. */
static int runs_here(hctx *h, uint32_t c, const char *point)
{
    if (!point)
        return 1;  /* after the operation: also how an unmodelled pool delivers */
    if (c == h->r->force_child && !h->up)
        return h->r->force_at == h->r->force_seen - 1;
    uint32_t gc = h->g->nodes[c].gc;
    if (gc == RP_NIL)
        return 0;
    rp_placement pl = placement_of(h, c);
    if (pl.where == RP_PLACED_POINT)
        return rp_placement_at(&pl, point);
    if (pl.where == RP_PLACED_OUTSIDE)
        return 0;
    if (between_attempts(h, gc))
        return 1;
    if (h->tr && h->tr->inside) {
        h->r->sh.later++;  /* the shadow's worst case: inside, at the first point */
        return 1;
    }
    return 0;
}

/* A collection delivered after its operation because its stack could not
 * say where it started, in a model where it could have re-entered. */
static void note_unplaced(hctx *h, uint32_t c)
{
    rp_replay *r = h->r;
    uint32_t gc = h->g->nodes[c].gc;
    if (h->tr || gc == RP_NIL || !h->p->ops || !h->p->ops->point_names)
        return;
    rp_placement pl = placement_of(h, c);
    if (pl.where != RP_PLACED_UNSURE && pl.where != RP_PLACED_UNKNOWN)
        return;
    if (!r->unplaced++)
        r->first_unplaced = h->g->buf[gc].seq;
    r->res.unplaced = r->unplaced;
    r->res.first_unplaced_seq = r->first_unplaced;
}

static int halted(const hctx *h)
{
    return h->r->stopped || (h->tr && h->tr->broke);
}

/* Apply the nested operations that run at this point, in order: one that
 * ran at a later point holds back those after it. */
static void deliver(hctx *h, const char *point)
{
    rp_replay *r = h->r;
    if (point && !h->up && r->force_child != RP_NIL && r->force_seen++ == r->force_at)
        r->force_where = point;
    if (h->node == RP_NIL || h->next_child == RP_NIL)
        return;
    const gathered *g = h->g;
    uint32_t first = h->next_child, count = 0;
    while (h->next_child != RP_NIL && !halted(h) && runs_here(h, h->next_child, point)) {
        uint32_t c = h->next_child;
        if (!point)
            note_unplaced(h, c);
        h->next_child = g->nodes[c].sibling;
        uint32_t cp = pool_id_of(&g->buf[g->nodes[c].begin]);
        pool *p = cp == h->p->id ? h->p : pool_of(r, cp);
        if (p != h->p && h->tr)
            continue;  /* a trial must not touch other pools' models */
        apply_node(r, p, p == h->p ? h->m : p->m, g, c, p == h->p, h, h->tr);
        count++;
    }
    if (!count || h->tr || r->nre == RP_MAX_NESTED)
        return;
    const node *f = &g->nodes[first];
    const tf_event *gc = f->gc != RP_NIL ? &g->buf[f->gc] : NULL;
    r->re[r->nre++] = (rp_reentry){g->buf[g->nodes[h->node].begin].seq, gc ? gc->seq : 0, g->buf[f->begin].seq,
                                   count, gc ? gc->native_stack : 0, gc ? gc->py_stack : 0, point};
}

/* ------------------------------------------------------------ operations */

/* Releases the log shows in this operation that the model did not make
 * itself (its out-of-memory ladder matched the others): applied after the
 * operation and what was delivered in it, so the model keeps no memory the
 * pool gave back. */
static void apply_releases(hctx *h)
{
    rp_replay *r = h->r;
    const node *nd = &h->g->nodes[h->node];
    uint64_t seq = h->g->buf[nd->begin].seq;
    for (uint32_t j = nd->begin + 1; j < nd->end && !r->stopped; j++) {
        const tf_event *e = &h->g->buf[j];
        uint64_t ptr;
        if (e->parent != seq || r->used[j] || !is_release(e, &ptr) || release_taken_back(h->g, nd, j))
            continue;
        uint64_t *base = rp_ptrmap_get(&h->p->segx, ptr);
        if (!base)
            continue;
        const rp_range *rg = rp_rangeset_find(&h->p->msegs, *base);
        uint64_t size = rg && rg->start == *base ? rg->end - rg->start : 0;
        if (e->kind == TF_EV_POOL_SEGMENT && e->u.segment.size)
            size = e->u.segment.size;
        int rc = h->p->ops->release(h->m, *base, size, &h->host);
        if (h->tr)
            continue;
        if (rc == RP_UNKNOWN)
            diverge(r, e->seq);
        rp_rangeset_erase(&h->p->msegs, *base, NULL);
        rp_ptrmap_del(&h->p->segx, ptr, NULL);
    }
}

static int run_alloc(hctx *h, uint32_t res_i, const tf_event *b)
{
    rp_replay *r = h->r;
    const tf_event *res = res_i == RP_NIL ? NULL : &h->g->buf[res_i];
    uint64_t size = b->kind == TF_EV_POOL_OP_BEGIN ? b->u.pool_op.arg : 0;
    if (!size && res)
        size = res->u.pool.requested ? res->u.pool.requested : res->u.pool.granted;
    if (!size)
        return RP_OK;  /* zero bytes: pools hand out no block */
    uint64_t hint = res ? res->u.pool.ptr : 0, ptr = 0, granted = 0;
    h->host.hint = hint;
    int rc = h->p->ops->alloc(h->m, size, res ? res->u.pool.stream : 0, &h->host, &ptr, &granted);
    if (h->tr && rc != RP_BROKEN && (rc == RP_OK ? !hint || ptr != hint : hint != 0))
        h->tr->left_log = 1;
    if (rc == RP_BROKEN || h->tr)
        return rc;
    if (rc == RP_OK && hint) {
        if (ptr == hint)
            r->res.matched++;
        else
            diverge(r, res->seq);
        rp_ptrmap_put(&h->p->xlat, hint, ptr);
    } else if ((rc == RP_OK) != (hint != 0)) {
        diverge(r, b->seq);  /* one of them failed where the other did not */
    }
    return RP_OK;
}

static int run_free(hctx *h, uint32_t res_i, const tf_event *b, int nested)
{
    rp_replay *r = h->r;
    uint64_t rec = res_i != RP_NIL ? h->g->buf[res_i].u.pool.ptr : b->u.pool_op.arg;
    uint64_t *mp = rp_ptrmap_get(&h->p->xlat, rec);
    if (!mp) {
        if (!h->tr && rec)
            diverge(r, b->seq);
        else if (h->tr && rec)
            h->tr->left_log = 1;
        return RP_OK;
    }
    uint64_t m = *mp;
    if (!h->tr)
        rp_ptrmap_del(&h->p->xlat, rec, NULL);
    int rc = h->p->ops->free(h->m, m, nested, &h->host);
    if (rc == RP_UNKNOWN && !h->tr)
        diverge(r, b->seq);
    else if (rc == RP_UNKNOWN)
        h->tr->left_log = 1;
    return rc == RP_BROKEN ? rc : RP_OK;
}

static hctx context(rp_replay *r, pool *p, void *m, const gathered *g, uint32_t nid, hctx *up, trial *tr,
                    const tf_event *ev)
{
    hctx h = {.r = r, .p = p, .m = m, .g = g, .node = nid, .next_child = RP_NIL, .up = up,
              .host = tr ? trial_host : record_host, .ev = ev, .tr = tr};
    if (g && nid != RP_NIL) {
        h.next_child = g->nodes[nid].child;
        h.seg_cursor = g->nodes[nid].begin + 1;
    }
    return h;
}

static int apply_node(rp_replay *r, pool *p, void *m, const gathered *g, uint32_t nid, int nested, hctx *up,
                      trial *tr)
{
    hctx h = context(r, p, m, g, nid, up, tr, NULL);
    h.host.ctx = &h;
    if (!p->ops || p->broken) {
        deliver(&h, NULL);  /* unmodelled: its nested operations still count */
        return r->stopped;
    }
    const tf_event *b = &g->buf[g->nodes[nid].begin];
    uint32_t res = result_of(g, nid);
    uint32_t kind = b->kind == TF_EV_POOL_OP_BEGIN ? b->u.pool_op.op
                    : b->kind == TF_EV_POOL_ALLOC  ? TF_POOL_OP_ALLOC
                                                   : TF_POOL_OP_FREE;
    int rc = RP_OK;
    if (kind == TF_POOL_OP_ALLOC)
        rc = run_alloc(&h, res, b);
    else if (kind == TF_POOL_OP_FREE)
        rc = run_free(&h, res, b, nested);
    if (rc == RP_BROKEN || halted(&h))
        return 1;
    deliver(&h, NULL);
    if (b->kind == TF_EV_POOL_OP_BEGIN && !halted(&h))
        apply_releases(&h);
    if (!tr) {
        /* Growth the log shows and the model did not predict. */
        const node *nd = &g->nodes[nid];
        for (uint32_t j = h.seg_cursor; j < nd->end; j++) {
            const tf_event *e = &g->buf[j];
            if (e->parent == b->seq && ((is_device_alloc(e) && e->u.cuda.ptr && !e->u.cuda.result) ||
                                        (e->kind == TF_EV_POOL_SEGMENT && e->u.segment.grow)))
                diverge(r, e->seq);
        }
    }
    return halted(&h);
}

/* ------------------------------------------------------------- top level */

static void note_series(rp_replay *r, uint64_t seq)
{
    uint64_t reserved = 0, allocated = 0, segments = 0, free_bytes = 0, largest = 0;
    if (!r->o.series)
        return;
    for (size_t i = 0; i < r->npools; i++) {
        pool *p = &r->pools[i];
        if (!p->selected)
            continue;
        rp_pool_figures f = rp_checks_pool(r->checks, p->id);
        reserved += f.reserved;
        allocated += f.allocated;
        segments += f.segments;
    }
    if (segments == r->last_segments)
        return;
    r->last_segments = segments;
    for (size_t i = 0; i < r->npools; i++) {
        rp_model_stats st;
        if (!r->pools[i].ops)
            continue;
        r->pools[i].ops->stats(r->pools[i].m, &st, 1);
        free_bytes += st.free_bytes;
        if (st.largest_free > largest)
            largest = st.largest_free;
    }
    rp_grow(&r->res.series, &r->capseries, r->res.nseries + 1, sizeof *r->res.series);
    r->res.series[r->res.nseries++] =
        (rp_series_point){seq, reserved, allocated, segments, free_bytes, largest};
}

static void note_peaks(rp_replay *r, uint64_t seq)
{
    uint64_t reserved = 0, allocated = 0;
    for (size_t i = 0; i < r->npools; i++) {
        if (!r->pools[i].selected)
            continue;
        rp_pool_figures f = rp_checks_pool(r->checks, r->pools[i].id);
        reserved += f.reserved;
        allocated += f.allocated;
    }
    if (reserved > r->res.peak_reserved) {
        r->res.peak_reserved = reserved;
        r->res.peak_reserved_seq = seq;
    }
    if (allocated > r->res.peak_allocated) {
        r->res.peak_allocated = allocated;
        r->res.peak_allocated_seq = seq;
    }
}

static void check_model(rp_replay *r, pool *p, const gathered *g)
{
    hctx h = context(r, p, p->m, g, 0, NULL, NULL, NULL);
    h.host.ctx = &h;
    h.next_child = RP_NIL;
    p->ops->check(p->m, r->o.paranoid, &h.host);
    rp_model_stats st;
    if (p->broken)
        return;
    p->ops->stats(p->m, &st, 0);
    if (st.reserved > r->model_peak_reserved)
        r->model_peak_reserved = st.reserved;
    if (st.allocated > r->model_peak_allocated)
        r->model_peak_allocated = st.allocated;
}

/* ------------------------------------------- collections no stack placed */

/* Collections explored per replay, at most (each costs a copy of the model
 * and a run of the operation per point it reaches). */
#define EXPLORE_MAX 100000
/* Points of one operation explored, at most. */
#define EXPLORE_POINTS 64

/* A device allocation attempt of the operation before buffer index i and
 * one after it: a collection there ran in the out-of-memory ladder, and
 * between_attempts places it. */
static int attempts_around(const gathered *g, uint32_t i)
{
    uint64_t seq = g->buf[0].seq;
    int before = 0;
    for (uint32_t j = 1; j < g->nodes[0].end; j++) {
        const tf_event *e = &g->buf[j];
        if (e->parent != seq ||
            !(is_device_alloc(e) || (e->kind == TF_EV_POOL_SEGMENT && e->u.segment.grow == TF_SEGMENT_GROW)))
            continue;
        if (j < i)
            before = 1;
        else if (j > i)
            return before;
    }
    return 0;
}

/* The first collection nested right in the top-level operation, running
 * frees of its pool, whose stack does not say where it started. */
static uint32_t ambiguous_child(rp_replay *r, pool *p, const gathered *g)
{
    hctx h = context(r, p, p->m, g, 0, NULL, NULL, NULL);
    h.host.ctx = &h;
    for (uint32_t c = g->nodes[0].child; c != RP_NIL; c = g->nodes[c].sibling) {
        uint32_t gc = g->nodes[c].gc;
        if (gc == RP_NIL || pool_id_of(&g->buf[g->nodes[c].begin]) != p->id)
            continue;
        rp_placement pl = placement_of(&h, c);
        if ((pl.where == RP_PLACED_UNSURE || pl.where == RP_PLACED_UNKNOWN) && !attempts_around(g, gc))
            return c;
    }
    return RP_NIL;
}

/* The operation on a scratch copy of the model with nested operation c run
 * at the at-th point it reaches (-1: after it).  1: an invariant broke
 * (tr->found), 0: the pool holds, -1: the operation does not reach it. */
static int placement_trial(rp_replay *r, pool *p, const gathered *g, uint32_t c, int at, trial *tr)
{
    if (!p->scratch)
        p->scratch = p->ops->create();
    p->ops->copy(p->scratch, p->m);
    memset(tr, 0, sizeof *tr);
    tr->point = -1;
    r->force_child = c;
    r->force_at = at;
    r->force_seen = 0;
    r->force_where = NULL;
    uint64_t synth = r->synth_next;
    apply_node(r, p, p->scratch, g, 0, 0, NULL, tr);
    int reached = at < 0 || r->force_seen > at;
    if (!tr->broke && reached) {
        hctx h = context(r, p, p->scratch, g, 0, NULL, tr, NULL);
        h.host.ctx = &h;
        h.next_child = RP_NIL;
        p->ops->check(p->scratch, 1, &h.host);  /* a full audit: damage an incremental check would meet later */
    }
    tr->where = r->force_where;
    r->synth_next = synth;
    r->force_child = RP_NIL;
    return reached ? tr->broke : -1;
}

#define AFTER "after the pool's bookkeeping"

/* A warning "ambiguity": the collection at seq gc, in the operation at seq
 * op, started where held (the pool holds: the replay of record goes so) or
 * where broke (the pool breaks, at once or, when, later). */
static void ambiguity(rp_replay *r, rp_site at, uint64_t gc, uint64_t op, const char *held, const char *broke,
                      const char *when, const rp_finding *bad)
{
    if (!r->res.ambiguous++)
        r->res.first_ambiguous_seq = gc;
    rp_finding w;
    memset(&w, 0, sizeof w);
    snprintf(w.invariant, sizeof w.invariant, "ambiguity");
    snprintf(w.message, sizeof w.message,
             "the collection at seq %llu, in the operation at seq %llu, has a stack that does not say where it "
             "started: started %s, the pool holds (replayed so); started %s, it breaks %s%s: %.180s",
             (unsigned long long)gc, (unsigned long long)op, held, broke, when ? when : "", bad->invariant,
             bad->message);
    w.at = at;
    rp_checks_add_warning(r->checks, &w);
}

static void end_shadow(rp_replay *r)
{
    if (r->sh.p)
        r->sh.p->ops->destroy(r->sh.m);
    memset(&r->sh, 0, sizeof r->sh);
}

/* The alternative where collection c ran at the first point of its
 * operation, followed from here while it keeps to the log. */
static void start_shadow(rp_replay *r, pool *p, const gathered *g, uint32_t c, uint64_t gc, uint64_t op)
{
    trial t;
    if (!p->ops->destroy || placement_trial(r, p, g, c, 0, &t) != 0 || t.left_log)
        return;
    r->sh.m = p->ops->create();
    p->ops->copy(r->sh.m, p->scratch);
    r->sh.p = p;
    r->sh.gc = gc;
    r->sh.op = op;
    r->sh.where = t.where ? t.where : "a point inside the bookkeeping";
}

/* The shadow's verdict on what it just ran. */
static void shadow_outcome(rp_replay *r, const trial *t)
{
    if (t->broke) {
        char broke[160];
        snprintf(broke, sizeof broke, "at %s (and %llu later ones that no stack places at the first point of "
                 "their operation)", r->sh.where, (unsigned long long)r->sh.later);
        ambiguity(r, t->found.at, r->sh.gc, r->sh.op, AFTER, broke, "later, at this event: ", &t->found);
        end_shadow(r);
    } else if (t->left_log) {
        end_shadow(r);  /* the alternative is not the history the log shows */
    }
}

/* Run this operation on the shadow too, before the replay of record (which
 * changes the address maps the shadow reads). */
static void follow_shadow(rp_replay *r, pool *p, const gathered *g)
{
    if (r->sh.p != p)
        return;
    trial t = {.point = -1, .inside = 1};
    uint64_t synth = r->synth_next;
    apply_node(r, p, r->sh.m, g, 0, 0, NULL, &t);
    if (!t.broke) {
        hctx h = context(r, p, r->sh.m, g, 0, NULL, &t, NULL);
        h.host.ctx = &h;
        h.next_child = RP_NIL;
        p->ops->check(r->sh.m, r->o.paranoid, &h.host);
    }
    r->synth_next = synth;
    shadow_outcome(r, &t);
}

/* A collection nested in this operation that no stack places could have
 * started after the pool's bookkeeping or at any point inside it: run each
 * on a scratch copy.  The same outcome everywhere: it runs after the
 * operation (if that breaks the pool, it breaks wherever it started, and
 * the violation stands, with a note saying so).  Outcomes that differ: an
 * ambiguity, with both outcomes, never a violation: the replay goes on
 * with a placement where the pool holds.  Sets r->force_* for that. */
static void explore_placement(rp_replay *r, pool *p, const gathered *g)
{
    if (!p->ops->copy || !p->ops->create || !p->ops->points || r->explored >= EXPLORE_MAX)
        return;
    uint32_t c = ambiguous_child(r, p, g);
    if (c == RP_NIL || would_reenter(p, g) <= 0)
        return;
    r->explored++;
    trial t;
    int after = placement_trial(r, p, g, c, -1, &t);
    rp_finding after_f = t.found, other_f;
    memset(&other_f, 0, sizeof other_f);
    int other = -1, reached = 0;
    const char *where = NULL;
    for (int k = 0; k < EXPLORE_POINTS && other < 0; k++) {
        int rc = placement_trial(r, p, g, c, k, &t);
        if (rc < 0)
            break;
        reached++;
        if (rc != after) {
            other = k;
            where = t.where;
            other_f = t.found;
        }
    }
    uint64_t gc = g->buf[g->nodes[c].gc].seq, op = g->buf[0].seq;
    hctx h = context(r, p, p->m, g, 0, NULL, NULL, NULL);
    h.host.ctx = &h;
    char text[sizeof ((rp_note_text *)0)->text];
    if (other < 0) {
        if (!after && reached && !r->sh.p)
            start_shadow(r, p, g, c, gc, op);
        if (after == 1) {
            snprintf(text, sizeof text,
                     "the collection at seq %llu, nested in the operation at seq %llu, has a stack that does not say "
                     "where it started; a full audit after the operation finds the pool broken wherever it started (after "
                     "the bookkeeping and at each of the %d points it reaches)",
                     (unsigned long long)gc, (unsigned long long)op, reached);
            record_note(&h, text);
        }
        return;
    }
    char at[120];
    snprintf(at, sizeof at, "at %s", where ? where : "a point inside the bookkeeping");
    if (after)
        ambiguity(r, site_of_ctx(&h), gc, op, at, AFTER, NULL, &after_f);
    else
        ambiguity(r, site_of_ctx(&h), gc, op, AFTER, at, NULL, &other_f);
    if (after) {
        r->force_child = c;  /* replayed where the pool holds */
        r->force_at = other;
        r->force_seen = 0;
    }
}

/* Run one gathered top-level operation (or a bare pool event). */
static void apply_top(rp_replay *r, const gathered *g)
{
    r->nre = 0;
    pool *p = modelled(r, pool_id_of(&g->buf[0]));
    if (!p)
        return;
    drive_pool(r, p);
    rp_grow(&r->used, &r->capused, g->nbuf, sizeof *r->used);
    memset(r->used, 0, g->nbuf);
    if (r->hook) {
        rp_opref op = opref_of(&g->buf[0]);
        r->pending = g;
        r->pending_pool = p;
        r->hook(r->hook_ctx, r, &op);
        r->pending = NULL;
        if (r->stopped)
            return;
    }
    r->res.ops++;
    if (p->ops && !p->broken) {
        follow_shadow(r, p, g);
        explore_placement(r, p, g);
    }
    apply_node(r, p, p->m, g, 0, 0, NULL, NULL);
    r->force_child = RP_NIL;
    if (!r->stopped && p->ops)
        check_model(r, p, g);
    audit_step(r);
}

/* ------------------------------------------------------------- gathering */

static uint32_t push_buf(gathered *g, const tf_event *e)
{
    rp_grow(&g->buf, &g->capbuf, g->nbuf + 1, sizeof *g->buf);
    g->buf[g->nbuf] = *e;
    return (uint32_t)g->nbuf++;
}

static uint32_t node_new(gathered *g, uint32_t begin, uint32_t end, uint32_t gc)
{
    rp_grow(&g->nodes, &g->capnodes, g->nnodes + 1, sizeof *g->nodes);
    g->nodes[g->nnodes] = (node){.begin = begin, .end = end, .child = RP_NIL, .sibling = RP_NIL,
                                 .last_child = RP_NIL, .gc = gc};
    return (uint32_t)g->nnodes++;
}

/* The buffer index of the event with this seq (the buffer is in seq order). */
static uint32_t index_of(const gathered *g, uint64_t seq)
{
    size_t lo = 0, hi = g->nbuf;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->buf[mid].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->nbuf && g->buf[lo].seq == seq ? (uint32_t)lo : RP_NIL;
}

static void start_gathering(thread *t, const tf_event *e)
{
    gathered *g = &t->g;
    g->nbuf = g->nnodes = 0;
    t->capture = e->seq;
    push_buf(g, e);
    node_new(g, 0, 1, RP_NIL);
    t->nopen = 0;
    rp_grow(&t->open, &t->capopen, 1, sizeof *t->open);
    t->open[t->nopen++] = 0;
}

/* An event inside the gathered operation.  Nested operations are those
 * inside it on its thread: through a collection, or directly; a bare pool
 * event inside a collection counts as one too. */
static void gather_event(thread *t, const tf_event *e, const rp_where *w)
{
    gathered *g = &t->g;
    uint32_t i = push_buf(g, e);
    int op = e->kind == TF_EV_POOL_OP_BEGIN;
    if (!op && !(is_bare(e) && w->up && w->up->kind != TF_EV_POOL_OP_BEGIN))
        return;
    if (t->nopen > MAX_DEPTH)
        return;
    /* The innermost open node is its parent; a collection between the two
     * is the one it ran in. */
    uint32_t parent = t->open[t->nopen - 1];
    uint64_t parent_seq = g->buf[g->nodes[parent].begin].seq, gc_seq = 0;
    for (uint32_t k = w->depth; k-- > 0 && w->frames[k].seq != parent_seq;)
        if (w->frames[k].kind == TF_EV_GC_START) {
            gc_seq = w->frames[k].seq;
            break;
        }
    uint32_t c = node_new(g, i, i + 1, gc_seq ? index_of(g, gc_seq) : RP_NIL);
    node *pn = &g->nodes[parent];
    if (pn->last_child == RP_NIL)
        pn->child = c;
    else
        g->nodes[pn->last_child].sibling = c;
    pn->last_child = c;
    if (op) {
        rp_grow(&t->open, &t->capopen, t->nopen + 1, sizeof *t->open);
        t->open[t->nopen++] = c;
    }
}

/* A frame closed: a nested operation's node ends here; the gathered
 * operation itself runs. */
static void gather_closed(rp_replay *r, thread *t, const rp_frame *f)
{
    gathered *g = &t->g;
    if (!t->nopen || g->buf[g->nodes[t->open[t->nopen - 1]].begin].seq != f->seq)
        return;
    uint32_t id = t->open[--t->nopen];
    g->nodes[id].end = (uint32_t)g->nbuf;
    if (id)
        return;
    t->capture = 0;
    apply_top(r, g);
}

/* A segment obtained outside any operation, for the model's next request. */
static void loose_segment(pool *p, uint64_t ptr, uint64_t size)
{
    if (p->loose_first == p->nloose)
        p->loose_first = p->nloose = 0;
    rp_grow(&p->loose, &p->caploose, p->nloose + 1, sizeof *p->loose);
    p->loose[p->nloose].ptr = ptr;
    p->loose[p->nloose++].size = size;
}

/* A segment given back outside any operation (free_all_blocks, empty_cache). */
static void top_release(rp_replay *r, const tf_event *e, uint64_t ptr, uint32_t pool_hint)
{
    for (size_t i = 0; i < r->npools && !r->stopped; i++) {
        pool *p = &r->pools[i];
        uint64_t *base;
        if (!p->ops || (pool_hint && p->id != pool_hint) || !(base = rp_ptrmap_get(&p->segx, ptr)))
            continue;
        drive_pool(r, p);
        hctx h = context(r, p, p->m, NULL, RP_NIL, NULL, NULL, e);
        h.host.ctx = &h;
        const rp_range *rg = rp_rangeset_find(&p->msegs, *base);
        uint64_t size = rg && rg->start == *base ? rg->end - rg->start : 0;
        if (e->kind == TF_EV_POOL_SEGMENT && e->u.segment.size)
            size = e->u.segment.size;
        /* Blocks in it whose frees were not recorded (the checks said so:
         * CuPy's pool object was gone): freed in the model first, as the
         * real chunks were before their segment went. */
        const uint64_t *unseen;
        size_t nunseen = rp_checks_unseen(r->checks, &unseen);
        for (size_t k = 0; k < nunseen; k++) {
            uint64_t mptr;
            if (!rp_ptrmap_del(&p->xlat, unseen[k], &mptr))
                continue;
            if (r->sh.p == p) {
                trial t = {.point = -1};
                hctx hs = context(r, p, r->sh.m, NULL, RP_NIL, NULL, &t, e);
                hs.host.ctx = &hs;
                if (p->ops->free(r->sh.m, mptr, 0, &hs.host) == RP_UNKNOWN)
                    t.left_log = 1;
                shadow_outcome(r, &t);
            }
            if (p->ops->free(p->m, mptr, 0, &h.host) == RP_UNKNOWN)
                diverge(r, e->seq);
        }
        if (r->sh.p == p) {
            trial t = {.point = -1};
            hctx hs = context(r, p, r->sh.m, NULL, RP_NIL, NULL, &t, e);
            hs.host.ctx = &hs;
            if (p->ops->release(r->sh.m, *base, size, &hs.host) == RP_UNKNOWN)
                t.left_log = 1;
            shadow_outcome(r, &t);
        }
        if (p->ops->release(p->m, *base, size, &h.host) == RP_UNKNOWN)
            diverge(r, e->seq);
        rp_rangeset_erase(&p->msegs, *base, NULL);
        rp_ptrmap_del(&p->segx, ptr, NULL);
        audit_step(r);
    }
}

static void model_event(rp_replay *r, const tf_event *e, const rp_where *w)
{
    /* driver_event has made the pool of every event that can start a
     * model's work (an operation, a pool event, a segment obtained). */
    if (!r->nmodelled)
        return;
    thread *t = thread_of(r, e->tid);
    if (t->capture) {
        gather_event(t, e, w);
        return;
    }
    switch (e->kind) {
    case TF_EV_POOL_OP_BEGIN:
        if (modelled(r, e->u.pool_op.pool))
            start_gathering(t, e);
        return;
    case TF_EV_POOL_ALLOC:
    case TF_EV_POOL_FREE:
        if (modelled(r, e->u.pool.pool)) {
            gathered *g = &r->bare;
            g->nbuf = g->nnodes = 0;
            push_buf(g, e);
            node_new(g, 0, 1, RP_NIL);
            apply_top(r, g);
        }
        return;
    case TF_EV_CUDA_FREE:
        if (e->u.cuda.ptr)
            top_release(r, e, e->u.cuda.ptr, 0);
        return;
    case TF_EV_POOL_SEGMENT:
        if (e->u.segment.grow == TF_SEGMENT_RELEASE)
            top_release(r, e, e->u.segment.ptr, e->u.segment.pool);
        else if (modelled(r, e->u.segment.pool) && e->u.segment.ptr)
            loose_segment(modelled(r, e->u.segment.pool), e->u.segment.ptr, e->u.segment.size);
        return;
    default:
        return;
    }
}

static int log2_floor(uint64_t x)
{
    int n = 0;
    while (x >>= 1)
        n++;
    return n;
}

/* The checks first, then the models. */
static int driver_event(void *ctx, const tf_event *e, const rp_where *w)
{
    rp_replay *r = ctx;
    if (r->stopped) {
        /* An operation this event closed broke an invariant: it still counts. */
        if (r->stopped_at && r->stopped_at == e->seq)
            r->res.events++;
        return 1;
    }
    /* On a walker someone else feeds (the report's): it keeps its frames. */
    if ((e->flags & TF_EVENT_AFTER_GAP) && !r->walk && r->res.history_lost_seq != e->seq)
        rp_replay_history_lost(r, e->seq);
    r->res.events++;
    rp_finding v;
    /* A segment counts once, told twice or not (a cudaMalloc nested in
     * the operation, then pool_segment grow): the checks keep it once. */
    uint32_t seg_pool = e->kind == TF_EV_POOL_SEGMENT && e->u.segment.grow ? e->u.segment.pool
                        : e->kind == TF_EV_CUDA_ALLOC ? w->owner_pool : 0;
    uint64_t segs_before = seg_pool ? rp_checks_pool(r->checks, seg_pool).segments : 0;
    if (rp_checks_wants(e) && rp_checks_event(r->checks, e, w->owner_pool, &v)) {
        if (!r->res.violated) {
            r->res.violation = v;
            r->res.violated = 1;
            r->res.diverged_before_violation = r->res.diverged;
            r->res.op = (rp_opref){0, 0, 0, 0, 0};
            r->res.nnested = r->res.nreentries = 0;
            add_broken(&r->res, v.invariant, v.message, 0);
            if (r->o.on_violation)
                r->o.on_violation(r->o.on_violation_ctx, &r->res);
            if (!r->o.keep_going) {
                r->stopped = 1;
                return 1;
            }
        } else if (r->o.on_violation) {
            rp_result later = r->res;
            later.violation = v;
            later.op = (rp_opref){0, 0, 0, 0, 0};
            later.nnested = later.nreentries = later.nbroken = 0;
            later.by_model = 0;
            add_broken(&later, v.invariant, v.message, 0);
            r->o.on_violation(r->o.on_violation_ctx, &later);
        }
    }
    switch (e->kind) {
    case TF_EV_POOL_OP_BEGIN:
        pool_of(r, e->u.pool_op.pool);
        break;
    case TF_EV_POOL_ALLOC:
    case TF_EV_POOL_FREE:
        pool_of(r, e->u.pool.pool);
        break;
    case TF_EV_POOL_SEGMENT:
        if (e->u.segment.grow && pool_of(r, e->u.segment.pool)->selected &&
            rp_checks_pool(r->checks, seg_pool).segments > segs_before)
            r->res.seg_sizes[log2_floor(e->u.segment.size)]++;
        break;
    case TF_EV_CUDA_ALLOC:
        if (w->owner_pool && is_device_alloc(e) && !e->u.cuda.result && e->u.cuda.ptr &&
            pool_of(r, w->owner_pool)->selected && rp_checks_pool(r->checks, seg_pool).segments > segs_before)
            r->res.seg_sizes[log2_floor(e->u.cuda.size)]++;
        break;
    default:
        break;
    }
    model_event(r, e, w);
    /* Peaks only rise on a growth; the series moves with segments. */
    if (e->kind == TF_EV_POOL_ALLOC || e->kind == TF_EV_POOL_SEGMENT || e->kind == TF_EV_CUDA_ALLOC)
        note_peaks(r, e->seq);
    if (e->kind == TF_EV_POOL_SEGMENT || e->kind == TF_EV_CUDA_ALLOC || e->kind == TF_EV_CUDA_FREE)
        note_series(r, e->seq);
    return r->stopped;
}

/* An operation the log ends inside (a process killed in a request, a log
 * cut there) before anything of its answer was recorded: only its begin
 * gathered.  Its answer is unknown, so the model is not asked: asked, it
 * answered something the log could not match, a divergence that made a
 * small log INCONCLUSIVE ("is it the right --model?"). */
static int unanswered_at_end(const thread *t, const rp_frame *f)
{
    return t->nopen == 1 && t->g.nbuf == 1 && t->g.buf[0].seq == f->seq;
}

static void driver_closed(void *ctx, const rp_frame *f, rp_close how, const tf_event *by)
{
    rp_replay *r = ctx;
    (void)by;
    if (!r->nmodelled)
        return;   /* nothing is gathered for a model */
    uint64_t *at = rp_ptrmap_get(&r->th_index, f->tid);
    if (!r->stopped && at && r->th[*at].capture && how == RP_CLOSE_EOF && unanswered_at_end(&r->th[*at], f)) {
        r->th[*at].capture = 0;
        r->th[*at].nopen = 0;
        return;
    }
    if (!r->stopped && at && r->th[*at].capture) {
        gather_closed(r, &r->th[*at], f);
        if (r->stopped && by)
            r->stopped_at = by->seq;
    }
}

int rp_replay_event(rp_replay *r, const tf_event *e)
{
    if (e->flags & TF_EVENT_AFTER_GAP)
        rp_replay_history_lost(r, e->seq);
    if (!r->walk) {
        r->walk = rp_walk_new();
        rp_replay_attach(r, r->walk);
    }
    return rp_walk_event(r->walk, e);
}

void rp_replay_finish(rp_replay *r, int clean_end)
{
    if (r->walk)
        rp_walk_end(r->walk);
    /* An operation whose frame the walker could not open (nested too deep)
     * still runs as far as the log shows it. */
    for (size_t i = 0; i < r->nth && !r->stopped; i++)
        if (r->th[i].capture) {
            r->th[i].capture = 0;
            apply_top(r, &r->th[i].g);
        }
    if (r->unplaced) {
        hctx h = context(r, NULL, NULL, NULL, RP_NIL, NULL, NULL, NULL);
        char text[320];
        snprintf(text, sizeof text,
                 "%llu collection(s) nested in pool operations (the first at seq %llu) have stacks that do not say "
                 "where they started (no symbols, or no native stacks): replayed after their operation, not inside "
                 "its bookkeeping, unless only a point inside held the pool (see ambiguity warnings)",
                 (unsigned long long)r->unplaced, (unsigned long long)r->first_unplaced);
        record_note(&h, text);
    }
    if (!r->res.peak_reserved)
        r->res.peak_reserved = r->model_peak_reserved;
    if (!r->res.peak_allocated)
        r->res.peak_allocated = r->model_peak_allocated;
    if (clean_end && !r->stopped)
        rp_checks_end(r->checks);
}

void rp_replay_stop(rp_replay *r) { r->stopped = 1; }

void rp_replay_history_lost(rp_replay *r, uint64_t first_seq)
{
    if (r->stopped)
        return;
    if (r->walk) {
        rp_walk_end(r->walk);   /* open operations run as far as they were seen */
        rp_walk_free(r->walk);
        r->walk = NULL;
    }
    for (size_t i = 0; i < r->nth; i++) {
        thread *t = &r->th[i];
        if (t->capture && !r->stopped)
            apply_top(r, &t->g);   /* nested deeper than the walker opens frames */
        t->capture = 0;
        t->nopen = 0;
    }
    rp_checks_forget(r->checks);
    end_shadow(r);   /* an alternative history ends with the models */
    for (size_t i = 0; i < r->npools; i++) {
        pool *p = &r->pools[i];
        if (p->ops) {
            p->ops->destroy(p->m);
            if (p->scratch)
                p->ops->destroy(p->scratch);
        }
        p->ops = NULL;
        p->m = p->scratch = NULL;
        p->broken = 0;
        rp_ptrmap_free(&p->xlat);
        rp_ptrmap_free(&p->segx);
        rp_rangeset_free(&p->msegs);
        rp_ptrmap_init(&p->xlat);
        rp_ptrmap_init(&p->segx);
        rp_rangeset_init(&p->msegs);
    }
    r->models_off = 1;
    if (!r->res.history_lost_seq)
        r->res.history_lost_seq = first_seq;
}

const rp_result *rp_replay_result(const rp_replay *r) { return &r->res; }

uint32_t rp_replay_warnings(const rp_replay *r, const rp_finding **list, uint64_t *total)
{
    return rp_checks_warnings(r->checks, list, total);
}

uint32_t rp_replay_pool_count(const rp_replay *r) { return (uint32_t)r->npools; }

uint32_t rp_replay_pools_selected(const rp_replay *r)
{
    uint32_t n = 0;
    for (size_t i = 0; i < r->npools; i++)
        n += r->pools[i].selected != 0;
    return n;
}

int rp_replay_pool_at(const rp_replay *r, uint32_t i, uint32_t *id, const rp_model_ops **model, rp_model_stats *st)
{
    if (i >= r->npools)
        return 0;
    const pool *p = &r->pools[i];
    *id = p->id;
    *model = p->ops;
    memset(st, 0, sizeof *st);
    if (p->ops)
        p->ops->stats(p->m, st, 1);
    return 1;
}

/* ---------------------------------------------------------------- explore */

void rp_replay_set_probe(rp_replay *r, rp_probe_hook hook, void *ctx)
{
    r->hook = hook;
    r->hook_ctx = ctx;
}

/* Ask the model how many re-entrancy points the pending operation reaches,
 * before paying for a copy of it. */
static int would_reenter(const pool *p, const gathered *g)
{
    const tf_event *b = &g->buf[0];
    uint32_t res = result_of(g, 0);
    const tf_event *e = res == RP_NIL ? NULL : &g->buf[res];
    uint32_t op = b->kind == TF_EV_POOL_OP_BEGIN ? b->u.pool_op.op
                  : b->kind == TF_EV_POOL_ALLOC  ? TF_POOL_OP_ALLOC
                                                 : TF_POOL_OP_FREE;
    if (op == TF_POOL_OP_ALLOC) {
        uint64_t size = b->kind == TF_EV_POOL_OP_BEGIN ? b->u.pool_op.arg : 0;
        if (!size && e)
            size = e->u.pool.requested ? e->u.pool.requested : e->u.pool.granted;
        return size && p->ops->points(p->m, op, size, e ? e->u.pool.stream : 0, e ? e->u.pool.ptr : 0);
    }
    if (op != TF_POOL_OP_FREE)
        return 0;
    uint64_t *mp = rp_ptrmap_get(&p->xlat, e ? e->u.pool.ptr : b->u.pool_op.arg);
    return mp && p->ops->points(p->m, op, *mp, 0, 0);
}

int rp_replay_trial(rp_replay *r, int point, const rp_trial_host *th, const char **where)
{
    pool *p = r->pending_pool;
    const gathered *g = r->pending;
    if (!p || !g || !p->ops->points || would_reenter(p, g) <= point)
        return -1;
    if (!p->scratch)
        p->scratch = p->ops->create();
    p->ops->copy(p->scratch, p->m);
    trial tr = {.th = th, .point = point};
    uint64_t synth = r->synth_next;
    apply_node(r, p, p->scratch, g, 0, 0, NULL, &tr);
    if (!tr.broke && tr.seen > point) {
        hctx h = context(r, p, p->scratch, g, 0, NULL, &tr, NULL);
        h.host.ctx = &h;
        h.next_child = RP_NIL;
        p->ops->check(p->scratch, r->o.paranoid, &h.host);
    }
    r->synth_next = synth;
    if (tr.seen <= point)
        return -1;
    *where = tr.where;
    return tr.broke;
}

/* ------------------------------------------------------------ checkpoints */

/* Every point between two events can be saved, operations being gathered
 * included (a follower's checkpoint must not wait for a quiet point: an
 * operation can stay open across a whole segment, and the segment of the
 * last checkpoint can be deleted in the meantime).  Not a replay that
 * stopped (nothing after it runs) or one a probe hook is inside. */
int rp_replay_saveable(const rp_replay *r)
{
    if (r->stopped || r->pending)
        return 0;
    for (size_t i = 0; i < r->nth; i++)
        for (size_t k = 0; r->th[i].capture && k < r->th[i].g.nnodes; k++)
            if (r->th[i].g.nodes[k].placed)
                return 0;   /* only an operation being applied places its collections */
    return 1;
}

size_t rp_replay_gathering(const rp_replay *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->nth; i++)
        n += r->th[i].capture != 0;
    return n;
}

/* A thread's operation being gathered: its events, the tree of operations
 * nested in it (nothing placed yet) and the frames still open. */
static void thread_save(const thread *t, rp_state_w *w)
{
    rp_state_u64(w, t->capture);
    if (!t->capture)
        return;
    rp_state_array(w, t->g.buf, t->g.nbuf, sizeof *t->g.buf);
    rp_state_u64(w, t->g.nnodes);
    for (size_t k = 0; k < t->g.nnodes; k++) {
        const node *n = &t->g.nodes[k];
        const uint32_t v[6] = {n->begin, n->end, n->child, n->sibling, n->last_child, n->gc};
        rp_state_put(w, v, sizeof v);
    }
    rp_state_array(w, t->open, t->nopen, sizeof *t->open);
}

static int thread_load(thread *t, rp_state_r *st)
{
    t->capture = rp_state_get_u64(st);
    if (!t->capture)
        return st->bad ? -1 : 0;
    size_t n;
    t->g.buf = rp_state_get_array(st, &n, sizeof *t->g.buf);
    t->g.nbuf = t->g.capbuf = n;
    uint64_t nnodes = rp_state_get_u64(st);
    if (st->bad || !n || !nnodes || nnodes > (uint64_t)(st->end - st->p) / 24)
        return -1;
    rp_grow(&t->g.nodes, &t->g.capnodes, (size_t)nnodes, sizeof *t->g.nodes);
    t->g.nnodes = (size_t)nnodes;
    for (size_t k = 0; k < t->g.nnodes; k++) {
        uint32_t v[6];
        rp_state_get(st, v, sizeof v);
        int links_ok = 1;
        for (int j = 2; j < 5; j++)
            links_ok &= v[j] == RP_NIL || v[j] < nnodes;
        if (v[0] >= n || v[1] > n || !links_ok || (v[5] != RP_NIL && v[5] >= n))
            return -1;
        t->g.nodes[k] = (node){.begin = v[0], .end = v[1], .child = v[2], .sibling = v[3], .last_child = v[4],
                               .gc = v[5]};
    }
    t->open = rp_state_get_array(st, &n, sizeof *t->open);
    t->nopen = t->capopen = n;
    for (size_t k = 0; k < n; k++)
        if (t->open[k] >= t->g.nnodes)
            return -1;
    return st->bad ? -1 : 0;
}

/* What the options decide about the state: a state is loaded by a replay
 * with the same (a state made with another model is another replay).
 * keep_going is not among them: it only decides whether to stop at the
 * first violation (rp_replay_load stops a replay that does not keep going
 * at one the state holds, as it would have stopped there). */
static void options_text(const rp_options *o, char *out, size_t cap)
{
    snprintf(out, cap, "model=%s auto=%d pool=%s paranoid=%d series=%d", o->model ? o->model->name : "-",
             o->model_auto, o->pool ? o->pool : "-", o->paranoid, o->series);
}

/* The plain values of the driver: every field that is neither a pointer
 * nor the state of an operation in progress (none, at a quiet point). */
typedef struct saved_driver {
    uint64_t events_stopped_at, synth_next, model_peak_reserved, model_peak_allocated, last_segments;
    uint64_t unplaced, first_unplaced, explored, nre;
    uint64_t last_pool, models_off;
} saved_driver;

static void result_save(const rp_result *res, rp_state_w *w)
{
    rp_state_put(w, res, sizeof *res);
    for (uint32_t i = 0; i < RP_MAX_NESTED; i++)
        rp_state_point(w, res->reentries[i].point);
    rp_state_array(w, res->series, res->nseries, sizeof *res->series);
}

static void result_load(rp_replay *r, rp_state_r *st)
{
    rp_state_get(st, &r->res, sizeof r->res);
    for (uint32_t i = 0; i < RP_MAX_NESTED; i++)
        r->res.reentries[i].point = rp_state_get_point(st);
    size_t n;
    r->res.series = rp_state_get_array(st, &n, sizeof *r->res.series);
    r->res.nseries = n;
    r->capseries = n;
}

void rp_replay_save(const rp_replay *r, rp_state_w *w)
{
    char opts[256];
    options_text(&r->o, opts, sizeof opts);
    rp_state_str(w, opts);
    saved_driver d = {
        .events_stopped_at = r->stopped_at, .synth_next = r->synth_next,
        .model_peak_reserved = r->model_peak_reserved, .model_peak_allocated = r->model_peak_allocated,
        .last_segments = r->last_segments, .unplaced = r->unplaced, .first_unplaced = r->first_unplaced,
        .explored = r->explored, .nre = r->nre, .last_pool = r->last_pool, .models_off = (uint64_t)r->models_off,
    };
    rp_state_put(w, &d, sizeof d);
    result_save(&r->res, w);
    for (uint32_t i = 0; i < RP_MAX_NESTED; i++) {
        rp_state_put(w, &r->re[i], sizeof r->re[i]);
        rp_state_point(w, r->re[i].point);
    }
    rp_checks_save(r->checks, w);
    /* The driver's threads: their order, and what each is gathering. */
    rp_state_ptrmap(w, &r->th_index);
    rp_state_u64(w, r->nth);
    for (size_t i = 0; i < r->nth; i++)
        thread_save(&r->th[i], w);
    rp_state_u64(w, r->npools);
    for (size_t i = 0; i < r->npools; i++) {
        const pool *p = &r->pools[i];
        rp_state_u64(w, p->id);
        rp_state_u64(w, (uint64_t)p->selected);
        rp_state_u64(w, (uint64_t)p->broken);
        rp_state_u64(w, (uint64_t)p->driven);
        rp_state_str(w, p->ops ? p->ops->name : NULL);
        if (p->ops)
            p->ops->save(p->m, w);
        rp_state_ptrmap(w, &p->xlat);
        rp_state_ptrmap(w, &p->segx);
        rp_state_rangeset(w, &p->msegs);
        rp_state_array(w, p->loose, p->nloose, sizeof *p->loose);
        rp_state_u64(w, p->loose_first);
    }
    rp_state_ptrmap(w, &r->pool_index);
    /* A shadow (an alternative history being followed) goes on after a
     * restore as it would have. */
    rp_state_u64(w, r->sh.p ? (uint64_t)(r->sh.p - r->pools) + 1 : 0);
    if (r->sh.p) {
        r->sh.p->ops->save(r->sh.m, w);
        rp_state_u64(w, r->sh.gc);
        rp_state_u64(w, r->sh.op);
        rp_state_point(w, r->sh.where);
        rp_state_u64(w, r->sh.later);
    }
    rp_state_u64(w, r->walk != NULL);
    if (r->walk)
        rp_walk_save(r->walk, w);
}

/* The model a state names, as the run chose it (the options were checked
 * to be the same). */
static const rp_model_ops *model_named(const char *name)
{
    for (size_t i = 0; name[0] && rp_models[i]; i++)
        if (!strcmp(rp_models[i]->name, name))
            return rp_models[i];
    return NULL;
}

int rp_replay_load(rp_replay *r, rp_state_r *st, char *err, size_t errlen)
{
    char opts[256], want[256], name[64];
    if (r->res.events || r->npools || r->nth) {
        snprintf(err, errlen, "the replay has already begun");
        return -1;
    }
    rp_state_get_str(st, opts, sizeof opts);
    options_text(&r->o, want, sizeof want);
    if (st->bad || strcmp(opts, want)) {
        snprintf(err, errlen, "saved by a check with other options (%s; this one: %s)", st->bad ? "?" : opts, want);
        return -1;
    }
    saved_driver d;
    rp_state_get(st, &d, sizeof d);
    r->stopped_at = d.events_stopped_at;
    r->synth_next = d.synth_next;
    r->model_peak_reserved = d.model_peak_reserved;
    r->model_peak_allocated = d.model_peak_allocated;
    r->last_segments = d.last_segments;
    r->unplaced = d.unplaced;
    r->first_unplaced = d.first_unplaced;
    r->res.unplaced = r->unplaced;
    r->res.first_unplaced_seq = r->first_unplaced;
    r->explored = d.explored;
    r->nre = (uint32_t)(d.nre <= RP_MAX_NESTED ? d.nre : 0);
    r->models_off = (int)d.models_off;
    result_load(r, st);
    for (uint32_t i = 0; i < RP_MAX_NESTED; i++) {
        rp_state_get(st, &r->re[i], sizeof r->re[i]);
        r->re[i].point = rp_state_get_point(st);
    }
    if (st->bad || rp_checks_load(r->checks, st) < 0)
        goto bad;
    rp_state_get_ptrmap(st, &r->th_index);
    uint64_t nth = rp_state_get_u64(st);
    if (st->bad || nth != r->th_index.len)
        goto bad;
    if (nth) {
        rp_grow(&r->th, &r->capth, (size_t)nth, sizeof *r->th);
        memset(r->th, 0, (size_t)nth * sizeof *r->th);
    }
    r->nth = (size_t)nth;
    for (size_t i = 0; i < r->nth; i++)
        if (thread_load(&r->th[i], st) < 0)
            goto bad;
    uint64_t npools = rp_state_get_u64(st);
    if (st->bad || npools > (uint64_t)(st->end - st->p) / 8)
        goto bad;
    rp_grow(&r->pools, &r->cappools, (size_t)npools, sizeof *r->pools);
    for (size_t i = 0; i < npools; i++) {
        pool *p = &r->pools[i];
        memset(p, 0, sizeof *p);
        rp_ptrmap_init(&p->xlat);
        rp_ptrmap_init(&p->segx);
        rp_rangeset_init(&p->msegs);
        r->npools = i + 1;
        p->id = (uint32_t)rp_state_get_u64(st);
        p->selected = (int)rp_state_get_u64(st);
        p->broken = (int)rp_state_get_u64(st);
        p->driven = (int)rp_state_get_u64(st);
        rp_state_get_str(st, name, sizeof name);
        if (st->bad)
            goto bad;
        if (name[0]) {
            p->ops = model_named(name);
            if (!p->ops) {
                snprintf(err, errlen, "the state names a model this build does not have (%s)", name);
                return -1;
            }
            p->m = p->ops->create();
            r->nmodelled++;
            if (p->ops->load(p->m, st) < 0)
                goto bad;
        }
        rp_state_get_ptrmap(st, &p->xlat);
        rp_state_get_ptrmap(st, &p->segx);
        rp_state_get_rangeset(st, &p->msegs);
        size_t n;
        p->loose = rp_state_get_array(st, &n, sizeof *p->loose);
        p->nloose = p->caploose = n;
        p->loose_first = (size_t)rp_state_get_u64(st);
        if (st->bad || p->loose_first > p->nloose)
            goto bad;
    }
    rp_state_get_ptrmap(st, &r->pool_index);
    if (st->bad || r->pool_index.len != r->npools || (r->npools && d.last_pool >= r->npools))
        goto bad;
    r->last_pool = (size_t)d.last_pool;
    uint64_t shadow = rp_state_get_u64(st);
    if (shadow) {
        if (st->bad || shadow > r->npools || !r->pools[shadow - 1].ops)
            goto bad;
        pool *p = &r->pools[shadow - 1];
        r->sh.m = p->ops->create();
        r->sh.p = p;
        if (p->ops->load(r->sh.m, st) < 0)
            goto bad;
        r->sh.gc = rp_state_get_u64(st);
        r->sh.op = rp_state_get_u64(st);
        r->sh.where = rp_state_get_point(st);
        if (!r->sh.where)
            r->sh.where = "a point inside the bookkeeping";
        r->sh.later = rp_state_get_u64(st);
    }
    if (rp_state_get_u64(st)) {
        r->walk = rp_walk_new();
        rp_replay_attach(r, r->walk);
        if (rp_walk_load(r->walk, st) < 0)
            goto bad;
    }
    if (st->bad || st->p != st->end)
        goto bad;
    if (r->res.violated && !r->o.keep_going)
        r->stopped = 1;
    return 0;
bad:
    snprintf(err, errlen, "the replay state does not read");
    return -1;
}

void rp_replay_map_stacks(rp_replay *r, const rp_stack_map *m)
{
    rp_checks_map_stacks(r->checks, m);
    if (r->walk)
        rp_walk_map_stacks(r->walk, m);
    rp_site_map(&r->res.violation.at, m);
    rp_site_map(&r->res.violation.other, m);
    for (uint32_t i = 0; i < RP_MAX_NESTED; i++) {
        rp_reentry *a = &r->res.reentries[i], *b = &r->re[i];
        a->gc_native_stack = rp_map_native(m, a->gc_native_stack);
        a->gc_py_stack = rp_map_py(m, a->gc_py_stack);
        b->gc_native_stack = rp_map_native(m, b->gc_native_stack);
        b->gc_py_stack = rp_map_py(m, b->gc_py_stack);
    }
    for (size_t i = 0; i < r->nth; i++)
        for (size_t k = 0; r->th[i].capture && k < r->th[i].g.nbuf; k++) {
            tf_event *e = &r->th[i].g.buf[k];
            e->native_stack = rp_map_native(m, e->native_stack);
            e->py_stack = rp_map_py(m, e->py_stack);
        }
}
