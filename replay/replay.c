/* replay.c - the check driver: log events -> checks and pool models. */
#include "replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"
#include "ptrmap.h"
#include "rangeset.h"
#include "xalloc.h"

/* Synthetic segment addresses, for growth the log does not show: far from
 * anything a real device hands out, so they cannot collide with recorded ones. */
#define SYNTH_BASE 0x7e0000000000ULL
#define SYNTH_ALIGN (2ULL << 20)

typedef struct frame { uint64_t seq; uint32_t kind, pool; } frame;

typedef struct thread {
    uint32_t tid;
    frame *st;                 /* open operations and collections */
    size_t nst, capst;
    tf_event *buf;             /* a top-level modelled operation, gathered */
    size_t nbuf, capbuf;
    uint64_t capture;          /* seq of its op_begin, 0 when not gathering */
    uint32_t capture_pool;
} thread;

typedef struct pool {
    uint32_t id;
    int selected;
    const rp_model_ops *ops;   /* NULL: model-free checks only */
    int broken;                /* keep_going: the model left the pool's state */
    void *m, *scratch;
    rp_ptrmap xlat;            /* recorded block address -> model address */
    rp_ptrmap segx;            /* recorded segment base -> model segment base */
    rp_rangeset msegs;         /* the model's segments */
} pool;

/* A pool operation inside a gathered buffer, and the operations nested in it. */
typedef struct node {
    uint32_t begin, end;       /* buffer indices: [begin, end) */
    uint32_t child, sibling;
    uint32_t gc;               /* index of the collection it ran in, RP_NIL */
} node;

/* One operation being applied to a model. */
typedef struct hctx {
    rp_replay *r;
    pool *p;
    void *m;
    const tf_event *buf;
    uint32_t node;             /* RP_NIL for an injected free */
    uint32_t next_child;
    uint32_t seg_cursor;
    struct hctx *up;
    rp_host host;
    const tf_event *ev;        /* outside any operation: the event itself */
} hctx;

struct rp_replay {
    rp_options o;
    rp_checks *checks;
    thread *th;
    size_t nth, capth, last_th;
    pool *pools;
    size_t npools, cappools;
    rp_ptrmap pool_index;          /* pool id -> position in pools */
    node *nodes;
    size_t nnodes, capnodes;
    rp_result res;
    size_t capseries;
    int stopped;
    uint64_t synth_next;
    uint64_t model_peak_reserved, model_peak_allocated;
    rp_reentry re[RP_MAX_NESTED];  /* re-entries of the current top-level op */
    uint32_t nre;
    uint64_t last_segments;
    rp_probe_hook hook;
    void *hook_ctx;
    struct {
        int active, point, seen, broke;
        const uint64_t *ptrs;
        uint32_t n;
        rp_finding f;
        const char *where;
        const tf_event *buf;   /* the pending operation */
        pool *p;
    } probe;
};

static int apply_node(rp_replay *r, pool *p, void *m, const tf_event *buf, uint32_t nid, int nested, hctx *up);

/* ------------------------------------------------------------------ setup */

rp_replay *rp_replay_new(const rp_options *o)
{
    rp_replay *r = rp_xcalloc(1, sizeof *r);
    r->o = *o;
    r->checks = rp_checks_new();
    r->synth_next = SYNTH_BASE;
    return r;
}

void rp_replay_free(rp_replay *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nth; i++) {
        free(r->th[i].st);
        free(r->th[i].buf);
    }
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
    }
    free(r->th);
    free(r->pools);
    rp_ptrmap_free(&r->pool_index);
    free(r->nodes);
    free(r->res.series);
    rp_checks_free(r->checks);
    free(r);
}

static thread *thread_of(rp_replay *r, uint32_t tid)
{
    if (r->last_th < r->nth && r->th[r->last_th].tid == tid)
        return &r->th[r->last_th];
    for (size_t i = 0; i < r->nth; i++)
        if (r->th[i].tid == tid) {
            r->last_th = i;
            return &r->th[i];
        }
    rp_grow(&r->th, &r->capth, r->nth + 1, sizeof *r->th);
    memset(&r->th[r->nth], 0, sizeof *r->th);
    r->th[r->nth].tid = tid;
    r->last_th = r->nth;
    return &r->th[r->nth++];
}

static const rp_model_ops *model_by_name(const char *name)
{
    static const struct { const char *word; const rp_model_ops *ops; } guess[] = {
        {"cupy5", &rp_model_cupy5}, {"cupy", &rp_model_cupy}, {"torch", &rp_model_torch}, {"bfc", &rp_model_tf_bfc},
        {"tensorflow", &rp_model_tf_bfc}, {"xla", &rp_model_tf_bfc},
    };
    for (size_t i = 0; name && i < sizeof guess / sizeof *guess; i++)
        if (strstr(name, guess[i].word))
            return guess[i].ops;
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

/* Found through a map: a log can name any number of pools. */
static pool *pool_of(rp_replay *r, uint32_t id)
{
    uint64_t *at = rp_ptrmap_get(&r->pool_index, id);
    if (at)
        return &r->pools[*at];
    rp_grow(&r->pools, &r->cappools, r->npools + 1, sizeof *r->pools);
    rp_ptrmap_put(&r->pool_index, id, r->npools);
    pool *p = &r->pools[r->npools++];
    memset(p, 0, sizeof *p);
    p->id = id;
    const char *name = r->o.pool_name ? r->o.pool_name(r->o.pool_name_ctx, id) : NULL;
    p->selected = pool_selected(&r->o, id, name);
    p->ops = !p->selected ? NULL : r->o.model ? r->o.model : r->o.model_auto ? model_by_name(name) : NULL;
    if (p->ops)
        p->m = p->ops->create();
    rp_ptrmap_init(&p->xlat);
    rp_ptrmap_init(&p->segx);
    rp_rangeset_init(&p->msegs);
    return p;
}

static pool *modelled(rp_replay *r, uint32_t id)
{
    pool *p = pool_of(r, id);
    return p->ops && !p->broken ? p : NULL;
}

/* ---------------------------------------------------------------- parsing */

static uint32_t node_new(rp_replay *r, uint32_t begin, uint32_t gc)
{
    rp_grow(&r->nodes, &r->capnodes, r->nnodes + 1, sizeof *r->nodes);
    r->nodes[r->nnodes] = (node){begin, begin + 1, RP_NIL, RP_NIL, gc};
    return (uint32_t)r->nnodes++;
}

static int is_bare(const tf_event *e)
{
    return e->kind == TF_EV_POOL_ALLOC || e->kind == TF_EV_POOL_FREE;
}

/* The operation starting at buf[i] and everything nested in it.  Nested
 * operations are those inside it on its thread: through a collection, or
 * directly; a bare pool_free under a collection counts as one too.  Below
 * MAX_DEPTH (deeper than any recorder nests) operations stay plain events,
 * so a hostile log cannot exhaust the stack. */
#define MAX_DEPTH 64
static uint32_t parse(rp_replay *r, const tf_event *buf, uint32_t n, uint32_t i, uint32_t gc, int depth)
{
    uint32_t id = node_new(r, i, gc);
    if (buf[i].kind != TF_EV_POOL_OP_BEGIN)
        return id;
    uint64_t seq = buf[i].seq;
    uint32_t gcs[16], last = RP_NIL, j = i + 1;
    int ngc = 0;
    while (j < n) {
        const tf_event *e = &buf[j];
        if (e->kind == TF_EV_POOL_OP_END && e->u.pool_op.begin == seq) {
            j++;
            break;
        }
        if (depth < MAX_DEPTH && (e->kind == TF_EV_POOL_OP_BEGIN || (is_bare(e) && e->parent != seq))) {
            uint32_t c = parse(r, buf, n, j, ngc ? gcs[ngc - 1] : RP_NIL, depth + 1);
            if (last == RP_NIL)
                r->nodes[id].child = c;
            else
                r->nodes[last].sibling = c;
            last = c;
            j = r->nodes[c].end;
            continue;
        }
        if (e->kind == TF_EV_GC_START && ngc < 16)
            gcs[ngc++] = j;
        else if (e->kind == TF_EV_GC_STOP && ngc)
            ngc--;
        j++;
    }
    r->nodes[id].end = j;
    return id;
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
static uint32_t result_of(rp_replay *r, const tf_event *buf, uint32_t nid)
{
    const node *nd = &r->nodes[nid];
    const tf_event *b = &buf[nd->begin];
    if (b->kind != TF_EV_POOL_OP_BEGIN)
        return nd->begin;
    for (uint32_t j = nd->begin + 1; j < nd->end; j++)
        if (buf[j].parent == b->seq && is_bare(&buf[j]) && buf[j].u.pool.pool == b->u.pool_op.pool)
            return j;
    return RP_NIL;
}

static rp_site site_at(rp_replay *r, const tf_event *buf, uint32_t nid)
{
    uint32_t i = result_of(r, buf, nid);
    const tf_event *e = &buf[i == RP_NIL ? r->nodes[nid].begin : i];
    return (rp_site){e->seq, e->tid, e->native_stack, e->py_stack};
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
    return h->node != RP_NIL ? h->buf[h->r->nodes[h->node].begin].seq : h->ev ? h->ev->seq : 0;
}

static void deliver(hctx *h, const char *point);
static void host_warning(void *ctx, const char *inv, const char *msg);

static void host_reenter(void *ctx, const char *point)
{
    hctx *h = ctx;
    rp_replay *r = h->r;
    if (r->stopped)
        return;
    if (r->probe.active && !h->up && r->probe.seen++ == r->probe.point) {
        r->probe.where = point;
        for (uint32_t i = 0; i < r->probe.n && !r->probe.broke; i++) {
            uint64_t *mp = rp_ptrmap_get(&h->p->xlat, r->probe.ptrs[i]);
            if (!mp)
                continue;
            hctx inj = *h;
            inj.node = RP_NIL;
            inj.up = h;
            inj.host.ctx = &inj;
            h->p->ops->free(h->m, *mp, 1, &inj.host);
        }
    }
    deliver(h, point);
}

static uint64_t synth_segment(rp_replay *r, uint64_t size)
{
    uint64_t base = r->synth_next;
    r->synth_next += (size + SYNTH_ALIGN - 1) / SYNTH_ALIGN * SYNTH_ALIGN + SYNTH_ALIGN;
    return base;
}

static int is_device_alloc(const tf_event *e)
{
    return e->kind == TF_EV_CUDA_ALLOC && e->u.cuda.api != TF_API_cuMemCreate &&
           e->u.cuda.api != TF_API_cuMemAddressReserve && e->u.cuda.api != TF_API_cudaMallocHost &&
           e->u.cuda.api != TF_API_cudaHostAlloc && e->u.cuda.api != TF_API_cuMemAllocHost_v2 &&
           e->u.cuda.api != TF_API_cuMemHostAlloc && e->u.cuda.api != TF_API_cuMemMap;
}

/* The model wants a segment: take the next one the log shows this operation
 * obtaining (the prediction matched if the sizes agree). */
static uint64_t host_segment(void *ctx, uint64_t size)
{
    hctx *h = ctx;
    rp_replay *r = h->r;
    int probe = r->probe.active;
    uint64_t rec = 0, rec_size = 0;
    int refused = 0;
    if (h->node != RP_NIL) {
        const node *nd = &r->nodes[h->node];
        uint64_t seq = h->buf[nd->begin].seq;
        for (uint32_t j = h->seg_cursor; j < nd->end && !rec; j++) {
            const tf_event *e = &h->buf[j];
            if (e->parent != seq)
                continue;
            if (is_device_alloc(e) && e->u.cuda.result != 0)
                refused = 1;
            else if (is_device_alloc(e) && e->u.cuda.ptr)
                rec = e->u.cuda.ptr, rec_size = e->u.cuda.size, h->seg_cursor = j + 1;
            else if (e->kind == TF_EV_POOL_SEGMENT && e->u.segment.grow == TF_SEGMENT_GROW)
                rec = e->u.segment.ptr, rec_size = e->u.segment.size, h->seg_cursor = j + 1;
        }
    }
    if (!rec && refused) {
        if (!probe)
            r->res.matched++;
        return 0;
    }
    if (!probe) {
        if (rec && rec_size == size)
            r->res.matched++;
        else
            diverge(r, seq_of(h));
    }
    uint64_t base = rec && rec_size >= size ? rec : h->host.hint;
    if (!base || rp_rangeset_overlap(&h->p->msegs, base, base + size))
        base = synth_segment(r, size);
    if (!probe) {
        rp_rangeset_insert(&h->p->msegs, base, base + size, rec, 0);
        rp_ptrmap_put(&h->p->segx, rec ? rec : base, base);
    }
    return base;
}

static void record_violation(rp_replay *r, hctx *h, const char *inv, const char *msg)
{
    rp_result *res = &r->res;
    hctx *chain[RP_MAX_NESTED * 2];
    uint32_t n = 0;
    for (hctx *x = h; x && n < RP_MAX_NESTED * 2; x = x->up)
        if (x->node != RP_NIL)
            chain[n++] = x;
    hctx *root = n ? chain[n - 1] : h;
    memset(&res->violation, 0, sizeof res->violation);
    snprintf(res->violation.invariant, sizeof res->violation.invariant, "%s", inv);
    snprintf(res->violation.message, sizeof res->violation.message, "%s", msg);
    res->violation.at = n       ? site_at(r, chain[0]->buf, chain[0]->node)
                        : h->ev ? (rp_site){h->ev->seq, h->ev->tid, h->ev->native_stack, h->ev->py_stack}
                                : (rp_site){0, 0, 0, 0};
    res->op = n ? opref_of(&root->buf[r->nodes[root->node].begin]) : (rp_opref){0, 0, 0, 0, 0};
    /* Enclosing operations and collections of the event, outermost first;
     * the top-level operation itself is "op". */
    res->nnested = 0;
    for (uint32_t i = n; i-- > 0;) {
        const node *nd = &r->nodes[chain[i]->node];
        if (i + 1 < n && nd->gc != RP_NIL && res->nnested < RP_MAX_NESTED)
            res->nested_in[res->nnested++] = opref_of(&chain[i]->buf[nd->gc]);
        if (i > 0 && res->nnested < RP_MAX_NESTED)
            res->nested_in[res->nnested++] = opref_of(&chain[i]->buf[nd->begin]);
    }
    memcpy(res->reentries, r->re, sizeof r->re);
    res->nreentries = r->nre;
    res->violated = 1;
}

static void host_violation(void *ctx, const char *inv, const char *msg)
{
    hctx *h = ctx;
    rp_replay *r = h->r;
    if (r->probe.active) {
        if (!r->probe.broke) {
            r->probe.broke = 1;
            memset(&r->probe.f, 0, sizeof r->probe.f);
            snprintf(r->probe.f.invariant, sizeof r->probe.f.invariant, "%s", inv);
            snprintf(r->probe.f.message, sizeof r->probe.f.message, "%s", msg);
            hctx *root = h;
            while (root->up)
                root = root->up;
            r->probe.f.at = site_at(r, root->buf, root->node);
        }
        return;
    }
    if (r->res.violated)
        return;
    record_violation(r, h, inv, msg);
    if (!r->o.keep_going)
        r->stopped = 1;
    else
        h->p->broken = 1;  /* the model's state is no longer the pool's */
}

static void host_warning(void *ctx, const char *inv, const char *msg)
{
    hctx *h = ctx;
    rp_replay *r = h->r;
    if (r->probe.active)
        return;  /* explore looks for violations only */
    rp_finding w;
    memset(&w, 0, sizeof w);
    snprintf(w.invariant, sizeof w.invariant, "%s", inv);
    snprintf(w.message, sizeof w.message, "%s", msg);
    hctx *root = h;
    while (root->up)
        root = root->up;
    if (root->node != RP_NIL)
        w.at = site_at(r, root->buf, root->node);
    else if (root->ev)
        w.at = (rp_site){root->ev->seq, root->ev->tid, root->ev->native_stack, root->ev->py_stack};
    rp_checks_add_warning(r->checks, &w);
}

/* The function a re-entrancy point names: "_Chunk.split: ..." ->
 * "chunk_split", as symbol names spell it (C or Cython). */
static void point_key(const char *point, char *key, size_t len)
{
    size_t n = 0;
    while (*point == '_')
        point++;
    for (; *point && *point != ':' && n + 1 < len; point++)
        key[n++] = *point == '.' ? '_' : (char)((*point >= 'A' && *point <= 'Z') ? *point - 'A' + 'a' : *point);
    key[n] = 0;
}

static int stack_names(rp_replay *r, uint32_t stack, const char *point)
{
    char key[64];
    point_key(point, key, sizeof key);
    return r->o.stack_has(r->o.stack_ctx, stack, key);
}

/* Does nested operation c run at this point?  Yes unless its collection's
 * stack shows it started at another of the model's points. */
static int runs_here(hctx *h, uint32_t c, const char *point)
{
    rp_replay *r = h->r;
    if (!point)
        return 1;  /* after the operation: also how an unmodelled pool delivers */
    const char *const *names = h->p->ops->point_names;
    uint32_t gc = r->nodes[c].gc;
    if (!r->o.stack_has || !names || gc == RP_NIL || !h->buf[gc].native_stack)
        return 1;
    uint32_t stack = h->buf[gc].native_stack;
    if (stack_names(r, stack, point))
        return 1;
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], point) && stack_names(r, stack, names[i]))
            return 0;
    return 1;
}

static void deliver(hctx *h, const char *point)
{
    rp_replay *r = h->r;
    if (h->node == RP_NIL || h->next_child == RP_NIL)
        return;
    uint32_t first = h->next_child, count = 0;
    /* In order: one that ran at a later point holds back those after it. */
    while (h->next_child != RP_NIL && !r->stopped && !r->probe.broke && runs_here(h, h->next_child, point)) {
        uint32_t c = h->next_child;
        h->next_child = r->nodes[c].sibling;
        uint32_t cp = pool_id_of(&h->buf[r->nodes[c].begin]);
        pool *p = cp == h->p->id ? h->p : pool_of(r, cp);
        if (p != h->p && r->probe.active)
            continue;  /* a probe must not touch other pools' models */
        apply_node(r, p, p == h->p ? h->m : p->m, h->buf, c, p == h->p, h);
        count++;
    }
    if (!count || r->probe.active || r->nre == RP_MAX_NESTED)
        return;
    const node *f = &r->nodes[first];
    const tf_event *gc = f->gc != RP_NIL ? &h->buf[f->gc] : NULL;
    r->re[r->nre++] = (rp_reentry){h->buf[r->nodes[h->node].begin].seq, gc ? gc->seq : 0, h->buf[f->begin].seq,
                                   count, gc ? gc->native_stack : 0, gc ? gc->py_stack : 0, point};
}

/* ------------------------------------------------------------ operations */

/* Segments this operation gave back before its own work (CuPy and PyTorch
 * free cached segments and retry when the device is full). */
static void apply_releases(hctx *h)
{
    rp_replay *r = h->r;
    const node *nd = &r->nodes[h->node];
    uint64_t seq = h->buf[nd->begin].seq;
    for (uint32_t j = nd->begin + 1; j < nd->end && !r->stopped; j++) {
        const tf_event *e = &h->buf[j];
        uint64_t ptr;
        if (e->parent != seq)
            continue;
        if (e->kind == TF_EV_CUDA_FREE)
            ptr = e->u.cuda.ptr;
        else if (e->kind == TF_EV_POOL_SEGMENT && e->u.segment.grow == TF_SEGMENT_RELEASE)
            ptr = e->u.segment.ptr;
        else
            continue;
        uint64_t *base = rp_ptrmap_get(&h->p->segx, ptr);
        if (!base)
            continue;
        int rc = h->p->ops->release(h->m, *base, &h->host);
        if (r->probe.active)
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
    const tf_event *res = res_i == RP_NIL ? NULL : &h->buf[res_i];
    uint64_t size = b->kind == TF_EV_POOL_OP_BEGIN ? b->u.pool_op.arg : 0;
    if (!size && res)
        size = res->u.pool.requested ? res->u.pool.requested : res->u.pool.granted;
    if (!size)
        return RP_OK;  /* zero bytes: pools hand out no block */
    uint64_t hint = res ? res->u.pool.ptr : 0, ptr = 0, granted = 0;
    h->host.hint = hint;
    int rc = h->p->ops->alloc(h->m, size, res ? res->u.pool.stream : 0, &h->host, &ptr, &granted);
    if (rc == RP_BROKEN || r->probe.active)
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
    uint64_t rec = res_i != RP_NIL ? h->buf[res_i].u.pool.ptr : b->u.pool_op.arg;
    uint64_t *mp = rp_ptrmap_get(&h->p->xlat, rec);
    if (!mp) {
        if (!r->probe.active && rec)
            diverge(r, b->seq);
        return RP_OK;
    }
    uint64_t m = *mp;
    if (!r->probe.active)
        rp_ptrmap_del(&h->p->xlat, rec, NULL);
    int rc = h->p->ops->free(h->m, m, nested, &h->host);
    if (rc == RP_UNKNOWN && !r->probe.active)
        diverge(r, b->seq);
    return rc == RP_BROKEN ? rc : RP_OK;
}

static int apply_node(rp_replay *r, pool *p, void *m, const tf_event *buf, uint32_t nid, int nested, hctx *up)
{
    hctx h = {r, p, m, buf, nid, r->nodes[nid].child, r->nodes[nid].begin + 1, up, {0}, NULL};
    h.host = (rp_host){&h, host_reenter, host_segment, host_violation, host_warning, 0};
    if (!p->ops || p->broken) {
        deliver(&h, NULL);  /* unmodelled: its nested operations still count */
        return r->stopped;
    }
    const tf_event *b = &buf[r->nodes[nid].begin];
    uint32_t res = result_of(r, buf, nid);
    uint32_t kind = b->kind == TF_EV_POOL_OP_BEGIN ? b->u.pool_op.op
                    : b->kind == TF_EV_POOL_ALLOC  ? TF_POOL_OP_ALLOC
                                                   : TF_POOL_OP_FREE;
    int rc = RP_OK;
    if (b->kind == TF_EV_POOL_OP_BEGIN)
        apply_releases(&h);
    if (r->stopped || r->probe.broke)
        return 1;
    if (kind == TF_POOL_OP_ALLOC)
        rc = run_alloc(&h, res, b);
    else if (kind == TF_POOL_OP_FREE)
        rc = run_free(&h, res, b, nested);
    if (rc == RP_BROKEN || r->stopped || r->probe.broke)
        return 1;
    deliver(&h, NULL);
    if (!r->probe.active && h.node != RP_NIL) {
        /* Growth the log shows and the model did not predict. */
        const node *nd = &r->nodes[nid];
        for (uint32_t j = h.seg_cursor; j < nd->end; j++)
            if (buf[j].parent == b->seq && ((is_device_alloc(&buf[j]) && buf[j].u.cuda.ptr && !buf[j].u.cuda.result) ||
                                           (buf[j].kind == TF_EV_POOL_SEGMENT && buf[j].u.segment.grow)))
                diverge(r, buf[j].seq);
    }
    return r->stopped || r->probe.broke;
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

static void check_model(rp_replay *r, pool *p, const tf_event *buf, uint32_t root)
{
    hctx h = {r, p, p->m, buf, root, RP_NIL, 0, NULL, {0}, NULL};
    h.host = (rp_host){&h, host_reenter, host_segment, host_violation, host_warning, 0};
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

/* Run one gathered top-level operation (or a bare pool event). */
static void apply_top(rp_replay *r, const tf_event *buf, uint32_t n)
{
    r->nnodes = 0;
    r->nre = 0;
    uint32_t root = parse(r, buf, n, 0, RP_NIL, 0);
    pool *p = modelled(r, pool_id_of(&buf[0]));
    if (!p)
        return;
    if (r->hook) {
        rp_opref op = opref_of(&buf[0]);
        r->probe.buf = buf;
        r->probe.p = p;
        r->hook(r->hook_ctx, r, &op);
        r->probe.buf = NULL;
        if (r->stopped)
            return;
    }
    r->res.ops++;
    apply_node(r, p, p->m, buf, root, 0, NULL);
    if (!r->stopped && p->ops)
        check_model(r, p, buf, root);
}

static void flush_capture(rp_replay *r, thread *t)
{
    uint64_t seq = t->capture;
    t->capture = 0;
    if (seq)
        apply_top(r, t->buf, (uint32_t)t->nbuf);
    t->nbuf = 0;
}

static void push_buf(thread *t, const tf_event *e)
{
    rp_grow(&t->buf, &t->capbuf, t->nbuf + 1, sizeof *t->buf);
    t->buf[t->nbuf++] = *e;
}

/* Keep the thread's stack of open operations; returns the pool of the
 * operation e is a direct child of (0 if none). */
static uint32_t track_nesting(thread *t, const tf_event *e)
{
    if (e->kind == TF_EV_POOL_OP_END) {
        while (t->nst && t->st[--t->nst].seq != e->u.pool_op.begin)
            ;
        return 0;
    }
    if (e->kind == TF_EV_GC_STOP) {
        while (t->nst && t->st[--t->nst].kind != TF_EV_GC_START)
            ;
        return 0;
    }
    while (t->nst && t->st[t->nst - 1].seq != e->parent)
        t->nst--;
    uint32_t owner = t->nst && t->st[t->nst - 1].kind == TF_EV_POOL_OP_BEGIN ? t->st[t->nst - 1].pool : 0;
    if (e->kind == TF_EV_POOL_OP_BEGIN || e->kind == TF_EV_GC_START) {
        rp_grow(&t->st, &t->capst, t->nst + 1, sizeof *t->st);
        t->st[t->nst++] = (frame){e->seq, e->kind, e->kind == TF_EV_GC_START ? 0 : e->u.pool_op.pool};
    }
    return owner;
}

/* A segment given back outside any operation (free_all_blocks, empty_cache). */
static void top_release(rp_replay *r, const tf_event *e, uint64_t ptr, uint32_t pool_hint)
{
    for (size_t i = 0; i < r->npools && !r->stopped; i++) {
        pool *p = &r->pools[i];
        uint64_t *base;
        if (!p->ops || (pool_hint && p->id != pool_hint) || !(base = rp_ptrmap_get(&p->segx, ptr)))
            continue;
        hctx h = {r, p, p->m, NULL, RP_NIL, RP_NIL, 0, NULL, {0}, e};
        h.host = (rp_host){&h, host_reenter, host_segment, host_violation, host_warning, 0};
        if (p->ops->release(p->m, *base, &h.host) == RP_UNKNOWN)
            diverge(r, e->seq);
        rp_rangeset_erase(&p->msegs, *base, NULL);
        rp_ptrmap_del(&p->segx, ptr, NULL);
    }
}

static void model_event(rp_replay *r, thread *t, const tf_event *e)
{
    if (t->capture) {
        /* A same-pool operation opened right inside the one being gathered
         * means that one never closed (it raised): replay it as it stands. */
        if (e->kind == TF_EV_POOL_OP_BEGIN && e->parent == t->capture && e->u.pool_op.pool == t->capture_pool)
            flush_capture(r, t);
        else {
            push_buf(t, e);
            if (e->kind == TF_EV_POOL_OP_END && e->u.pool_op.begin == t->capture)
                flush_capture(r, t);
            return;
        }
    }
    switch (e->kind) {
    case TF_EV_POOL_OP_BEGIN:
        if (!modelled(r, e->u.pool_op.pool))
            return;
        t->capture = e->seq;
        t->capture_pool = e->u.pool_op.pool;
        push_buf(t, e);
        return;
    case TF_EV_POOL_ALLOC:
    case TF_EV_POOL_FREE:
        if (modelled(r, e->u.pool.pool))
            apply_top(r, e, 1);
        return;
    case TF_EV_CUDA_FREE:
        if (e->u.cuda.ptr)
            top_release(r, e, e->u.cuda.ptr, 0);
        return;
    case TF_EV_POOL_SEGMENT:
        if (e->u.segment.grow == TF_SEGMENT_RELEASE)
            top_release(r, e, e->u.segment.ptr, e->u.segment.pool);
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

int rp_replay_event(rp_replay *r, const tf_event *e)
{
    if (r->stopped)
        return 1;
    r->res.events++;
    thread *t = thread_of(r, e->tid);
    uint32_t owner = track_nesting(t, e);
    rp_finding v;
    if (rp_checks_event(r->checks, e, owner, &v) && !r->res.violated) {
        r->res.violation = v;
        r->res.violated = 1;
        r->res.op = (rp_opref){0, 0, 0, 0, 0};
        if (!r->o.keep_going) {
            r->stopped = 1;
            return 1;
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
        if (e->u.segment.grow && pool_of(r, e->u.segment.pool)->selected)
            r->res.seg_sizes[log2_floor(e->u.segment.size)]++;
        break;
    case TF_EV_CUDA_ALLOC:
        if (owner && is_device_alloc(e) && !e->u.cuda.result && e->u.cuda.ptr && pool_of(r, owner)->selected)
            r->res.seg_sizes[log2_floor(e->u.cuda.size)]++;
        break;
    default:
        break;
    }
    model_event(r, t, e);
    /* Peaks only rise on a growth; the series moves with segments. */
    if (e->kind == TF_EV_POOL_ALLOC || e->kind == TF_EV_POOL_SEGMENT || e->kind == TF_EV_CUDA_ALLOC)
        note_peaks(r, e->seq);
    if (e->kind == TF_EV_POOL_SEGMENT || e->kind == TF_EV_CUDA_ALLOC || e->kind == TF_EV_CUDA_FREE)
        note_series(r, e->seq);
    return r->stopped;
}

void rp_replay_finish(rp_replay *r, int clean_end)
{
    for (size_t i = 0; i < r->nth && !r->stopped; i++)
        flush_capture(r, &r->th[i]);
    if (!r->res.peak_reserved)
        r->res.peak_reserved = r->model_peak_reserved;
    if (!r->res.peak_allocated)
        r->res.peak_allocated = r->model_peak_allocated;
    if (clean_end && !r->stopped)
        rp_checks_end(r->checks);
}

void rp_replay_stop(rp_replay *r) { r->stopped = 1; }

const rp_result *rp_replay_result(const rp_replay *r) { return &r->res; }

uint32_t rp_replay_warnings(const rp_replay *r, const rp_finding **list, uint64_t *total)
{
    return rp_checks_warnings(r->checks, list, total);
}

uint32_t rp_replay_pool_count(const rp_replay *r) { return (uint32_t)r->npools; }

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
static int would_reenter(rp_replay *r, pool *p, const tf_event *buf)
{
    const tf_event *b = &buf[0];
    uint32_t res = result_of(r, buf, 0);
    const tf_event *e = res == RP_NIL ? NULL : &buf[res];
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

int rp_replay_try(rp_replay *r, int point, const uint64_t *ptrs, uint32_t n, rp_finding *f, const char **where)
{
    pool *p = r->probe.p;
    const tf_event *buf = r->probe.buf;
    if (!p || !buf || !p->ops->points || would_reenter(r, p, buf) <= point)
        return -1;
    if (!p->scratch)
        p->scratch = p->ops->create();
    p->ops->copy(p->scratch, p->m);
    r->probe.active = 1;
    r->probe.point = point;
    r->probe.seen = 0;
    r->probe.broke = 0;
    r->probe.ptrs = ptrs;
    r->probe.n = n;
    r->probe.where = NULL;
    uint64_t synth = r->synth_next;
    apply_node(r, p, p->scratch, buf, 0, 0, NULL);
    if (!r->probe.broke && r->probe.seen > point) {
        hctx h = {r, p, p->scratch, buf, 0, RP_NIL, 0, NULL, {0}, NULL};
        h.host = (rp_host){&h, host_reenter, host_segment, host_violation, host_warning, 0};
        p->ops->check(p->scratch, r->o.paranoid, &h.host);
    }
    r->synth_next = synth;
    r->probe.active = 0;
    if (r->probe.seen <= point)
        return -1;
    if (!r->probe.broke)
        return 0;
    *f = r->probe.f;
    *where = r->probe.where;
    return 1;
}
