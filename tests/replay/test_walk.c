/* test_walk.c - the event walker: frames, what closes them and how, what
 * each subscriber is told, one event at a time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "walk.h"

static int failures;
#define CHECK(cond)                                                                                                \
    do {                                                                                                           \
        if (!(cond)) {                                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                              \
            failures++;                                                                                            \
        }                                                                                                          \
    } while (0)

/* What a subscriber saw, as text: "e7@2:op3" is event 7 at depth 2 inside
 * frame 3 (an operation), "c3L7" frame 3 closed (E end, L left, F end of
 * log) by event 7. */
typedef struct seen {
    char text[4096];
    int stop_at;               /* return 1 (done) at this seq */
} seen;

static void add(seen *s, const char *fmt, unsigned long long a, unsigned long long b, unsigned long long c)
{
    size_t n = strlen(s->text);
    snprintf(s->text + n, sizeof s->text - n, fmt, a, b, c);
}

static int on_event(void *ctx, const tf_event *e, const rp_where *w)
{
    seen *s = ctx;
    add(s, "e%llu@%llu", e->seq, w->depth, 0);
    if (w->up)
        add(s, w->up->kind == TF_EV_GC_START ? ":gc%llu" : ":op%llu", w->up->seq, 0, 0);
    add(s, " ", 0, 0, 0);
    return s->stop_at && (uint64_t)s->stop_at == e->seq;
}

static void on_closed(void *ctx, const rp_frame *f, rp_close how, const tf_event *by)
{
    seen *s = ctx;
    add(s, how == RP_CLOSE_END ? "c%lluE%llu " : how == RP_CLOSE_LEFT ? "c%lluL%llu " : "c%lluF%llu ", f->seq,
        by ? by->seq : 0, 0);
}

static tf_event ev(uint32_t kind, uint32_t tid, uint64_t seq, uint64_t parent)
{
    tf_event e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    e.tid = tid;
    e.seq = seq;
    e.t_ns = seq * 10;
    e.parent = parent;
    return e;
}

static tf_event op(uint32_t pool, uint32_t tid, uint64_t seq, uint64_t parent)
{
    tf_event e = ev(TF_EV_POOL_OP_BEGIN, tid, seq, parent);
    e.u.pool_op.pool = pool;
    e.u.pool_op.op = TF_POOL_OP_ALLOC;
    e.u.pool_op.arg = 512;
    return e;
}

static tf_event op_end(uint32_t pool, uint32_t tid, uint64_t seq, uint64_t parent, uint64_t begin)
{
    tf_event e = ev(TF_EV_POOL_OP_END, tid, seq, parent);
    e.u.pool_op.pool = pool;
    e.u.pool_op.begin = begin;
    return e;
}

/* Feed events to a fresh walker with one recording subscriber. */
static void walk(const tf_event *evs, size_t n, seen *s, int end)
{
    rp_walk *w = rp_walk_new();
    rp_subscriber sub = {s, on_event, on_closed};
    rp_walk_subscribe(w, &sub);
    for (size_t i = 0; i < n; i++)
        rp_walk_event(w, &evs[i]);
    if (end)
        rp_walk_end(w);
    rp_walk_free(w);
}

static void expect(const tf_event *evs, size_t n, const char *want)
{
    seen s = {"", 0};
    walk(evs, n, &s, 1);
    CHECK(!strcmp(s.text, want));
    if (strcmp(s.text, want))
        fprintf(stderr, "  got:  %s\n  want: %s\n", s.text, want);
}

/* A free inside a collection inside an allocation, on one thread, with
 * another thread's events in between. */
static void nesting(void)
{
    tf_event e[] = {
        op(1, 1, 1, 0),
        ev(TF_EV_GC_START, 1, 2, 1),
        ev(TF_EV_CUDA_ALLOC, 2, 3, 0),          /* another thread, top level */
        op(2, 1, 4, 2),
        ev(TF_EV_POOL_FREE, 1, 5, 4),
        op_end(2, 1, 6, 2, 4),
        ev(TF_EV_GC_STOP, 1, 7, 1),
        ev(TF_EV_POOL_ALLOC, 1, 8, 1),
        op_end(1, 1, 9, 0, 1),
        ev(TF_EV_MARK, 1, 10, 0),
    };
    expect(e, sizeof e / sizeof *e,
           "e1@0 e2@1:op1 e3@0 e4@2:gc2 e5@3:op4 c4E6 e6@2:gc2 c2E7 e7@1:op1 e8@1:op1 c1E9 e9@0 e10@0 ");
}

/* The frames' own facts: owner pool, in_gc, the pool a collection ran in. */
static const rp_frame *inner_gc_seen;
static uint32_t owner_seen[16], gc_over_seen[16], in_gc_seen[16];

static int facts(void *ctx, const tf_event *e, const rp_where *w)
{
    (void)ctx;
    if (e->seq < 16) {
        owner_seen[e->seq] = w->owner_pool;
        gc_over_seen[e->seq] = w->up ? w->up->gc_over_pool : 0;
        in_gc_seen[e->seq] = w->up ? (uint32_t)w->up->in_gc : 0;
        inner_gc_seen = rp_where_gc(w);
    }
    return 0;
}

static void frame_facts(void)
{
    tf_event e[] = {
        op(1, 1, 1, 0),
        ev(TF_EV_CUDA_ALLOC, 1, 2, 1),          /* pool 1's segment */
        ev(TF_EV_GC_START, 1, 3, 1),
        ev(TF_EV_CUDA_ALLOC, 1, 4, 3),          /* inside the collection: nobody's segment */
        op(1, 1, 5, 3),                         /* pool 1 re-entered */
        ev(TF_EV_POOL_FREE, 1, 6, 5),
    };
    rp_walk *w = rp_walk_new();
    rp_subscriber sub = {NULL, facts, NULL};
    rp_walk_subscribe(w, &sub);
    for (size_t i = 0; i < sizeof e / sizeof *e; i++)
        rp_walk_event(w, &e[i]);
    CHECK(owner_seen[2] == 1 && owner_seen[4] == 0 && owner_seen[6] == 1);
    CHECK(in_gc_seen[2] == 0 && in_gc_seen[4] == 1 && in_gc_seen[6] == 1);
    CHECK(gc_over_seen[4] == 1 && gc_over_seen[6] == 1 && gc_over_seen[2] == 0);
    CHECK(inner_gc_seen && inner_gc_seen->seq == 3);
    rp_walk_free(w);
}

/* An operation that raised never ends: what the log shows next closes it. */
static void left(void)
{
    /* The recorder keeps op 1 open: the next operation of the same pool
     * nests right inside it, and the walker closes op 1 first. */
    tf_event same_pool[] = {
        op(1, 1, 1, 0),
        op(1, 1, 2, 1),
        op_end(1, 1, 3, 1, 2),
        ev(TF_EV_MARK, 1, 4, 1),               /* still "inside" 1 for the recorder */
    };
    expect(same_pool, 4, "e1@0 c1L2 e2@0 c2E3 e3@0 e4@0 ");
    /* Another pool's operation inside it is nesting, not an exception. */
    tf_event other_pool[] = {op(1, 1, 1, 0), op(2, 1, 2, 1), op_end(2, 1, 3, 1, 2), op_end(1, 1, 4, 0, 1)};
    expect(other_pool, 4, "e1@0 e2@1:op1 c2E3 e3@1:op1 c1E4 e4@0 ");
    /* A parent that is not the innermost frame: the frames above it were
     * left (a collection whose gc_stop was lost with a damaged frame). */
    tf_event lost_stop[] = {op(1, 1, 1, 0), ev(TF_EV_GC_START, 1, 2, 1), ev(TF_EV_POOL_ALLOC, 1, 3, 1)};
    expect(lost_stop, 3, "e1@0 e2@1:op1 c2L3 e3@1:op1 c1F0 ");
    /* An end closes what is still open inside its frame; an end whose frame
     * is not open closes nothing. */
    tf_event ends[] = {
        op(1, 1, 1, 0), ev(TF_EV_GC_START, 1, 2, 1), op_end(1, 1, 3, 0, 1),
        op_end(1, 1, 4, 0, 99), ev(TF_EV_GC_STOP, 1, 5, 0),
    };
    expect(ends, 5, "e1@0 e2@1:op1 c2E3 c1E3 e3@0 e4@0 e5@0 ");
}

/* One event at a time: what a subscriber is told never depends on what
 * comes later (check --follow feeds a log while it is being written). */
static void incremental(void)
{
    tf_event e[] = {op(1, 1, 1, 0), ev(TF_EV_GC_START, 1, 2, 1), op(1, 1, 3, 2)};
    seen s = {"", 0};
    rp_walk *w = rp_walk_new();
    rp_subscriber sub = {&s, on_event, on_closed};
    rp_walk_subscribe(w, &sub);
    for (size_t i = 0; i < 3; i++)
        rp_walk_event(w, &e[i]);
    CHECK(!strcmp(s.text, "e1@0 e2@1:op1 e3@2:gc2 "));
    tf_event more = op_end(1, 1, 4, 2, 3);
    rp_walk_event(w, &more);
    CHECK(!strcmp(s.text, "e1@0 e2@1:op1 e3@2:gc2 c3E4 e4@2:gc2 "));
    rp_walk_end(w);
    CHECK(!strcmp(s.text, "e1@0 e2@1:op1 e3@2:gc2 c3E4 e4@2:gc2 c2F0 c1F0 "));
    rp_walk_free(w);
}

/* A subscriber that is done hears nothing more; the walker says when all are. */
static void done(void)
{
    seen a = {"", 2}, b = {"", 0};
    rp_walk *w = rp_walk_new();
    rp_subscriber sa = {&a, on_event, on_closed}, sb = {&b, on_event, on_closed};
    rp_walk_subscribe(w, &sa);
    rp_walk_subscribe(w, &sb);
    tf_event e[] = {op(1, 1, 1, 0), ev(TF_EV_MARK, 1, 2, 1), op_end(1, 1, 3, 0, 1)};
    CHECK(rp_walk_event(w, &e[0]) == 0);
    CHECK(rp_walk_event(w, &e[1]) == 0);
    CHECK(rp_walk_event(w, &e[2]) == 0);
    CHECK(!strcmp(a.text, "e1@0 e2@1:op1 "));
    CHECK(!strcmp(b.text, "e1@0 e2@1:op1 c1E3 e3@0 "));
    rp_walk_free(w);
    seen only = {"", 1};
    w = rp_walk_new();
    rp_walk_subscribe(w, &(rp_subscriber){&only, on_event, on_closed});
    CHECK(rp_walk_event(w, &e[0]) == 1);
    rp_walk_free(w);
}

/* A hostile log cannot grow a thread's frames without bound. */
static int deepest(void *ctx, const tf_event *e, const rp_where *w)
{
    (void)e;
    uint32_t *d = ctx;
    if (w->depth > *d)
        *d = w->depth;
    return 0;
}

static void depth_limit(void)
{
    rp_walk *w = rp_walk_new();
    uint32_t most = 0;
    rp_walk_subscribe(w, &(rp_subscriber){&most, deepest, NULL});
    for (uint64_t seq = 1; seq <= 3 * RP_WALK_MAX_DEPTH; seq++) {
        tf_event e = ev(TF_EV_GC_START, 1, seq, seq - 1 < RP_WALK_MAX_DEPTH ? seq - 1 : RP_WALK_MAX_DEPTH);
        rp_walk_event(w, &e);
    }
    CHECK(most == RP_WALK_MAX_DEPTH);
    rp_walk_end(w);
    rp_walk_free(w);
}

int main(void)
{
    nesting();
    frame_facts();
    left();
    incremental();
    done();
    depth_limit();
    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
