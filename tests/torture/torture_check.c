/*
 * torture_check.c - read a log the way a torture test needs it: count events
 * by kind, list the marks, and check the order the recorder promises.
 *
 *   torture_check [--lenient-frees] LOG
 *
 * Prints, one per line:
 *   header <pid> <ppid>
 *   kind <name> <count> <how many of them nest in an operation>
 *   mark <t_ns> <text>
 *   damage <what the reader says>
 *   error <what broke>          (the first few; "errors <n>" gives the total)
 * Exit 0 when every check holds, 1 when one broke, 2 when the log cannot be
 * opened.
 *
 * Checks: seq strictly increasing; every free (CUDA, pool, host) of a live
 * pointer from an earlier alloc; a parent is an earlier event of the same
 * thread; every op_end closes an open op_begin of the same thread; every
 * gc_stop follows a gc_start on its thread.  --lenient-frees counts frees of
 * unknown pointers instead of failing (a signal handler's alloc can be
 * dropped while the recorder is busy on its own thread, its free not).
 */
#include "trace_format.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERRORS_SHOWN 10

/* ---------------------------------------------------------- pointer sets */

/* Open addressing over (space, ptr) keys; deleted slots are tombstones. */
typedef struct ptrset {
    uint64_t *keys;   /* 0: empty, 1: tombstone */
    size_t cap, used;
} ptrset;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static void ptrset_grow(ptrset *s);

static int ptrset_add(ptrset *s, uint64_t key)
{
    if ((s->used + 1) * 2 > s->cap)
        ptrset_grow(s);
    size_t i = mix(key) & (s->cap - 1);
    while (s->keys[i] > 1) {
        if (s->keys[i] == key)
            return 0;
        i = (i + 1) & (s->cap - 1);
    }
    s->keys[i] = key;
    s->used++;
    return 1;
}

static int ptrset_remove(ptrset *s, uint64_t key)
{
    if (!s->cap)
        return 0;
    size_t i = mix(key) & (s->cap - 1);
    while (s->keys[i]) {
        if (s->keys[i] == key) {
            s->keys[i] = 1;
            return 1;
        }
        i = (i + 1) & (s->cap - 1);
    }
    return 0;
}

static void ptrset_grow(ptrset *s)
{
    ptrset bigger = { calloc(s->cap ? s->cap * 2 : 1024, sizeof(uint64_t)),
                      s->cap ? s->cap * 2 : 1024, 0 };
    if (!bigger.keys) {
        fprintf(stderr, "torture_check: out of memory\n");
        exit(2);
    }
    for (size_t i = 0; i < s->cap; i++)
        if (s->keys[i] > 1)
            ptrset_add(&bigger, s->keys[i]);
    free(s->keys);
    *s = bigger;
}

/* Keys never collide with the empty/tombstone markers nor across spaces. */
static uint64_t key_of(uint32_t space, uint64_t ptr)
{
    return (ptr << 8 | space) + 2;
}

/* ------------------------------------------------------------ the checks */

typedef struct seen {   /* per seq: what the event was */
    uint32_t tid;
    uint8_t kind;
    uint8_t open;       /* an op_begin not yet ended */
} seen;

typedef struct checker {
    seen *events;       /* indexed by seq */
    uint64_t nevents_cap;
    uint64_t last_seq;
    ptrset live;
    uint64_t counts[TF_KIND_MAX];
    uint64_t nested[TF_KIND_MAX];   /* events with a parent, by kind */
    uint64_t errors, unknown_frees;
    int lenient_frees;
    const tf_reader *reader;
} checker;

static void fail(checker *c, const char *fmt, ...)
{
    if (c->errors++ < ERRORS_SHOWN) {
        va_list ap;
        va_start(ap, fmt);
        printf("error ");
        vprintf(fmt, ap);
        printf("\n");
        va_end(ap);
    }
}

static seen *seen_at(checker *c, uint64_t seq)
{
    if (seq >= c->nevents_cap) {
        uint64_t cap = c->nevents_cap ? c->nevents_cap : 4096;
        while (cap <= seq)
            cap *= 2;
        seen *grown = realloc(c->events, cap * sizeof *grown);
        if (!grown) {
            fprintf(stderr, "torture_check: out of memory\n");
            exit(2);
        }
        memset(grown + c->nevents_cap, 0, (cap - c->nevents_cap) * sizeof *grown);
        c->events = grown;
        c->nevents_cap = cap;
    }
    return &c->events[seq];
}

static void check_alloc(checker *c, const tf_event *e, uint32_t space, uint64_t ptr)
{
    if (!ptrset_add(&c->live, key_of(space, ptr)))
        fail(c, "seq %llu: %s of 0x%llx, already live", (unsigned long long)e->seq,
             tf_kind_name(e->kind), (unsigned long long)ptr);
}

static void check_free(checker *c, const tf_event *e, uint32_t space, uint64_t ptr)
{
    if (ptrset_remove(&c->live, key_of(space, ptr)))
        return;
    if (c->lenient_frees)
        c->unknown_frees++;
    else
        fail(c, "seq %llu: %s of 0x%llx, not live (free before its alloc?)",
             (unsigned long long)e->seq, tf_kind_name(e->kind), (unsigned long long)ptr);
}

/* An earlier event of the same thread; kind 0 accepts any kind. */
static seen *earlier_same_thread(checker *c, const tf_event *e, uint64_t seq, const char *what)
{
    if (seq == 0 || seq >= e->seq || seq >= c->nevents_cap || !c->events[seq].kind) {
        fail(c, "seq %llu: %s %llu is not an earlier event", (unsigned long long)e->seq, what,
             (unsigned long long)seq);
        return NULL;
    }
    seen *s = &c->events[seq];
    if (s->tid != e->tid) {
        fail(c, "seq %llu (tid %u): %s %llu is on tid %u", (unsigned long long)e->seq, e->tid,
             what, (unsigned long long)seq, s->tid);
        return NULL;
    }
    return s;
}

static void check_pointers(checker *c, const tf_event *e)
{
    switch (e->kind) {
    case TF_EV_CUDA_ALLOC:
        if (e->u.cuda.result == 0)
            check_alloc(c, e, 1, e->u.cuda.ptr);
        break;
    case TF_EV_CUDA_FREE:
        if (e->u.cuda.result == 0 && e->u.cuda.ptr)
            check_free(c, e, 1, e->u.cuda.ptr);
        break;
    case TF_EV_POOL_ALLOC:
        check_alloc(c, e, 16 + e->u.pool.pool % 200, e->u.pool.ptr);
        break;
    case TF_EV_POOL_FREE:
        check_free(c, e, 16 + e->u.pool.pool % 200, e->u.pool.ptr);
        break;
    case TF_EV_HOST_ALLOC:
        check_alloc(c, e, 2, e->u.host.ptr);
        break;
    case TF_EV_HOST_FREE:
        check_free(c, e, 2, e->u.host.ptr);
        break;
    }
}

static void check_nesting(checker *c, const tf_event *e)
{
    if (e->parent)
        earlier_same_thread(c, e, e->parent, "parent");
    if (e->kind == TF_EV_POOL_OP_END) {
        seen *b = earlier_same_thread(c, e, e->u.pool_op.begin, "op_end's begin");
        if (b && (b->kind != TF_EV_POOL_OP_BEGIN || !b->open))
            fail(c, "seq %llu: op_end of %llu, which is no open op_begin",
                 (unsigned long long)e->seq, (unsigned long long)e->u.pool_op.begin);
        else if (b)
            b->open = 0;
    }
}

static void print_mark(const checker *c, const tf_event *e)
{
    size_t len = 0;
    const char *text = tf_reader_string(c->reader, e->u.mark.text, &len);
    printf("mark %llu %.*s\n", (unsigned long long)e->t_ns, text ? (int)len : 0,
           text ? text : "");
}

static void check_event(checker *c, const tf_event *e)
{
    if (e->seq <= c->last_seq)
        fail(c, "seq %llu after %llu", (unsigned long long)e->seq,
             (unsigned long long)c->last_seq);
    c->last_seq = e->seq;
    if (e->kind < TF_KIND_MAX) {
        c->counts[e->kind]++;
        c->nested[e->kind] += e->parent != 0;
    }
    seen *s = seen_at(c, e->seq);
    s->tid = e->tid;
    s->kind = (uint8_t)e->kind;
    s->open = e->kind == TF_EV_POOL_OP_BEGIN;
    check_nesting(c, e);
    check_pointers(c, e);
    if (e->kind == TF_EV_MARK)
        print_mark(c, e);
}

/* gc_start/gc_stop pair up per thread: walk the log's order per tid. */
typedef struct gc_depth { uint32_t tid; int depth; } gc_depth;

static void check_gc_pairs(checker *c, const tf_event *e, gc_depth *d, size_t *nd, size_t cap)
{
    if (e->kind != TF_EV_GC_START && e->kind != TF_EV_GC_STOP)
        return;
    size_t i = 0;
    while (i < *nd && d[i].tid != e->tid)
        i++;
    if (i == *nd) {
        if (*nd == cap)
            return;   /* more collecting threads than we track: skip */
        d[(*nd)++] = (gc_depth){ e->tid, 0 };
    }
    d[i].depth += e->kind == TF_EV_GC_START ? 1 : -1;
    if (d[i].depth < 0) {
        fail(c, "seq %llu: gc_stop without gc_start on tid %u", (unsigned long long)e->seq,
             e->tid);
        d[i].depth = 0;
    }
}

static void print_summary(const checker *c, const tf_reader *r)
{
    for (uint32_t k = 0; k < TF_KIND_MAX; k++)
        if (c->counts[k])
            printf("kind %s %llu %llu\n", tf_kind_name(k) ? tf_kind_name(k) : "?",
                   (unsigned long long)c->counts[k], (unsigned long long)c->nested[k]);
    if (c->unknown_frees)
        printf("unknown_frees %llu\n", (unsigned long long)c->unknown_frees);
    const char *damage = tf_reader_damage(r);
    if (damage)
        printf("damage %s\n", damage);
    printf("clean_end %d\n", tf_reader_status(r)->clean_end);
    printf("errors %llu\n", (unsigned long long)c->errors);
    for (uint32_t i = 0; i < tf_reader_info_count(r); i++) {
        const char *key, *value;
        if (tf_reader_info(r, i, &key, &value))
            printf("info %s %s\n", key, value);
    }
}

int main(int argc, char **argv)
{
    checker c = { 0 };
    int argi = 1;
    if (argi < argc && strcmp(argv[argi], "--lenient-frees") == 0) {
        c.lenient_frees = 1;
        argi++;
    }
    if (argi + 1 != argc) {
        fprintf(stderr, "usage: torture_check [--lenient-frees] LOG\n");
        return 2;
    }
    char err[256];
    tf_reader *r = tf_reader_open(argv[argi], err, sizeof err);
    if (!r) {
        printf("open_failed %s\n", err);
        return 2;
    }
    c.reader = r;
    const tf_header *h = tf_reader_header(r);
    printf("header %u %u\n", h->pid, h->ppid);
    gc_depth depths[256];
    size_t ndepths = 0;
    tf_event e;
    while (tf_reader_next(r, &e)) {
        check_event(&c, &e);
        check_gc_pairs(&c, &e, depths, &ndepths, sizeof depths / sizeof *depths);
    }
    print_summary(&c, r);
    tf_reader_close(r);
    free(c.events);
    free(c.live.keys);
    return c.errors ? 1 : 0;
}
