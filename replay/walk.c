/* walk.c - per-thread frames, and the subscribers that share them. */
#include "walk.h"

#include <stdlib.h>
#include <string.h>

#include "finding.h"
#include "ptrmap.h"
#include "state.h"
#include "xalloc.h"

#define MAX_SUBSCRIBERS 8

typedef struct thread {
    rp_frame *f;               /* open frames, outermost first */
    uint32_t n;
    size_t cap;
} thread;

struct rp_walk {
    rp_subscriber sub[MAX_SUBSCRIBERS];
    unsigned char done[MAX_SUBSCRIBERS];
    int nsub, live;
    thread *th;                /* in order of first appearance */
    size_t nth, capth;
    rp_ptrmap th_index;        /* tid -> position in th */
    uint32_t last_tid;         /* the thread of the previous event: runs are long */
    size_t last_th;
};

rp_walk *rp_walk_new(void)
{
    rp_walk *w = rp_xcalloc(1, sizeof *w);
    rp_ptrmap_init(&w->th_index);
    w->last_th = SIZE_MAX;
    return w;
}

void rp_walk_free(rp_walk *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->nth; i++)
        free(w->th[i].f);
    free(w->th);
    rp_ptrmap_free(&w->th_index);
    free(w);
}

void rp_walk_subscribe(rp_walk *w, const rp_subscriber *s)
{
    if (w->nsub == MAX_SUBSCRIBERS)
        abort();   /* a programming error, not a property of a log */
    w->sub[w->nsub++] = *s;
    w->live++;
}

static thread *thread_of(rp_walk *w, uint32_t tid)
{
    if (w->last_th != SIZE_MAX && w->last_tid == tid)
        return &w->th[w->last_th];
    uint64_t *at = rp_ptrmap_get(&w->th_index, tid);
    if (!at) {
        rp_grow(&w->th, &w->capth, w->nth + 1, sizeof *w->th);
        memset(&w->th[w->nth], 0, sizeof *w->th);
        rp_ptrmap_put(&w->th_index, tid, w->nth);
        at = rp_ptrmap_get(&w->th_index, tid);
        w->nth++;
    }
    w->last_tid = tid;
    w->last_th = (size_t)*at;
    return &w->th[w->last_th];
}

static void close_top(rp_walk *w, thread *t, rp_close how, const tf_event *by)
{
    const rp_frame *f = &t->f[--t->n];
    for (int i = 0; i < w->nsub; i++)
        if (!w->done[i] && w->sub[i].closed)
            w->sub[i].closed(w->sub[i].ctx, f, how, by);
}

/* Close what e shows is closed. */
static void close_for(rp_walk *w, thread *t, const tf_event *e)
{
    if (e->kind == TF_EV_POOL_OP_END || e->kind == TF_EV_GC_STOP) {
        int gc = e->kind == TF_EV_GC_STOP;
        uint32_t k = t->n;
        while (k && !(gc ? t->f[k - 1].kind == TF_EV_GC_START
                         : t->f[k - 1].kind == TF_EV_POOL_OP_BEGIN && t->f[k - 1].seq == e->u.pool_op.begin))
            k--;
        /* Its start is not in the log: nothing closes. */
        while (k && t->n >= k)
            close_top(w, t, RP_CLOSE_END, e);
        return;
    }
    while (t->n && t->f[t->n - 1].seq != e->parent)
        close_top(w, t, RP_CLOSE_LEFT, e);
    /* An allocation or free right inside an open allocation or free of its
     * own pool: that one raised.  An `other` operation on either side is a
     * pool calling itself (a trim inside an allocation, its retry after):
     * the hooks that leave raised operations open make none. */
    if (e->kind == TF_EV_POOL_OP_BEGIN && t->n && t->f[t->n - 1].kind == TF_EV_POOL_OP_BEGIN &&
        t->f[t->n - 1].pool == e->u.pool_op.pool && e->u.pool_op.op != TF_POOL_OP_OTHER &&
        t->f[t->n - 1].op != TF_POOL_OP_OTHER)
        close_top(w, t, RP_CLOSE_LEFT, e);
}

static void open_frame(thread *t, const tf_event *e)
{
    if (t->n == RP_WALK_MAX_DEPTH)
        return;
    rp_grow(&t->f, &t->cap, t->n + 1, sizeof *t->f);
    const rp_frame *up = t->n ? &t->f[t->n - 1] : NULL;
    int op = e->kind == TF_EV_POOL_OP_BEGIN;
    rp_frame f = {
        .seq = e->seq, .t_ns = e->t_ns, .tid = e->tid, .kind = e->kind,
        .pool = op ? e->u.pool_op.pool : 0, .op = op ? e->u.pool_op.op : 0,
        .arg = op ? e->u.pool_op.arg : (uint64_t)e->u.gc.generation,
        .native_stack = e->native_stack, .py_stack = e->py_stack, .depth = t->n,
        .in_gc = !op || (up && up->in_gc),
    };
    if (op) {
        f.pool_ctx = e->u.pool_op.pool;
        f.pool_ctx_seq = e->seq;
    } else if (up) {
        f.pool_ctx = up->pool_ctx;
        f.pool_ctx_seq = up->pool_ctx_seq;
    }
    if (up) {
        f.gc_over_pool = up->gc_over_pool;
        f.gc_over_seq = up->gc_over_seq;
    }
    if (!op && up && up->pool_ctx) {
        f.gc_over_pool = up->pool_ctx;
        f.gc_over_seq = up->pool_ctx_seq;
    }
    t->f[t->n++] = f;
}

int rp_walk_event(rp_walk *w, const tf_event *e)
{
    if (!w->live)
        return 1;
    thread *t = thread_of(w, e->tid);
    close_for(w, t, e);
    rp_where at = {t->f, t->n, t->n ? &t->f[t->n - 1] : NULL, 0};
    if (at.up && at.up->kind == TF_EV_POOL_OP_BEGIN)
        at.owner_pool = at.up->pool;
    for (int i = 0; i < w->nsub; i++)
        if (!w->done[i] && w->sub[i].event(w->sub[i].ctx, e, &at)) {
            w->done[i] = 1;
            w->live--;
        }
    if (e->kind == TF_EV_POOL_OP_BEGIN || e->kind == TF_EV_GC_START)
        open_frame(t, e);
    return !w->live;
}

void rp_walk_end(rp_walk *w)
{
    for (size_t i = 0; i < w->nth; i++)
        while (w->th[i].n)
            close_top(w, &w->th[i], RP_CLOSE_EOF, NULL);
}

const rp_frame *rp_where_gc(const rp_where *w)
{
    for (uint32_t i = w->depth; i-- > 0;)
        if (w->frames[i].kind == TF_EV_GC_START)
            return &w->frames[i];
    return NULL;
}

/* ------------------------------------------------------------ checkpoints */

/* Threads in order of first appearance (rp_walk_end closes in that
 * order), each with its open frames (plain values). */
void rp_walk_save(const rp_walk *w, rp_state_w *st)
{
    rp_state_u64(st, w->nth);
    for (size_t i = 0; i < w->nth; i++)
        rp_state_array(st, w->th[i].f, w->th[i].n, sizeof *w->th[i].f);
    rp_state_ptrmap(st, &w->th_index);   /* tid -> position: the threads' ids */
}

int rp_walk_load(rp_walk *w, rp_state_r *st)
{
    uint64_t nth = rp_state_get_u64(st);
    if (st->bad || w->nth || nth > (uint64_t)(st->end - st->p) / 8)
        return -1;
    rp_grow(&w->th, &w->capth, (size_t)nth, sizeof *w->th);
    for (size_t i = 0; i < nth; i++) {
        thread *t = &w->th[i];
        size_t n;
        t->f = rp_state_get_array(st, &n, sizeof *t->f);
        t->n = (uint32_t)n;
        t->cap = n;
        w->nth = i + 1;
        if (n > RP_WALK_MAX_DEPTH)
            st->bad = 1;
    }
    rp_state_get_ptrmap(st, &w->th_index);
    w->last_th = SIZE_MAX;
    return st->bad ? -1 : 0;
}

void rp_walk_map_stacks(rp_walk *w, const rp_stack_map *m)
{
    for (size_t i = 0; i < w->nth; i++)
        for (uint32_t k = 0; k < w->th[i].n; k++) {
            rp_frame *f = &w->th[i].f[k];
            f->native_stack = rp_map_native(m, f->native_stack);
            f->py_stack = rp_map_py(m, f->py_stack);
        }
}
