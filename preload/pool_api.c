/*
 * pool_api.c - pool events from the annotation API (trace_api.h).
 *
 * op_begin opens an operation (REC_OPEN): everything this thread records
 * until op_end (a cudaMalloc, a garbage collection, another pool's
 * operation) nests under it.  The token op_begin returns is its seq.
 */
#include "pool_api.h"
#include "recorder.h"
#include "trace_api.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Names kept to define the pools again in a forked child's log. */
#define MAX_NAMED_POOLS 1024

static _Atomic int last_pool;
static char *_Atomic pool_names[MAX_NAMED_POOLS];

int pool_api_register(const char *name)
{
    int pool = atomic_fetch_add(&last_pool, 1) + 1;
    const char *shown = name ? name : "";
    if (pool < MAX_NAMED_POOLS)
        atomic_store(&pool_names[pool], strdup(shown));
    rec_pool((uint32_t)pool, shown);
    return pool;
}

void pool_api_fork_child(void)
{
    int n = atomic_load(&last_pool);
    for (int pool = 1; pool <= n && pool < MAX_NAMED_POOLS; pool++) {
        const char *name = atomic_load(&pool_names[pool]);
        if (name)
            rec_pool((uint32_t)pool, name);
    }
}

uint64_t pool_api_op_begin(int pool, int op, uint64_t arg)
{
    tf_event e;
    tf_event_init(&e, TF_EV_POOL_OP_BEGIN);
    e.u.pool_op.pool = (uint32_t)pool;
    e.u.pool_op.op = (uint32_t)op;
    e.u.pool_op.arg = arg;
    return rec_event(&e, REC_STACKS | REC_OPEN);
}

void pool_api_op_end(int pool, uint64_t op)
{
    rec_close(op);
    tf_event e;
    tf_event_init(&e, TF_EV_POOL_OP_END);
    e.u.pool_op.pool = (uint32_t)pool;
    e.u.pool_op.begin = op;
    rec_event(&e, REC_STACKS);
}

void pool_api_alloc(int pool, const void *ptr, size_t requested, size_t granted, uint64_t stream)
{
    tf_event e;
    tf_event_init(&e, TF_EV_POOL_ALLOC);
    e.u.pool.pool = (uint32_t)pool;
    e.u.pool.ptr = (uintptr_t)ptr;
    e.u.pool.requested = requested;
    e.u.pool.granted = granted;
    e.u.pool.stream = stream;
    rec_event(&e, REC_STACKS);
}

void pool_api_free(int pool, const void *ptr, size_t size)
{
    tf_event e;
    tf_event_init(&e, TF_EV_POOL_FREE);
    e.u.pool.pool = (uint32_t)pool;
    e.u.pool.ptr = (uintptr_t)ptr;
    e.u.pool.granted = size;
    rec_event(&e, REC_STACKS);
}

void pool_api_segment(int pool, int grow, const void *ptr, size_t size)
{
    tf_event e = { .kind = TF_EV_POOL_SEGMENT };
    e.u.segment.pool = (uint32_t)pool;
    e.u.segment.grow = (uint32_t)grow;
    e.u.segment.ptr = (uintptr_t)ptr;
    e.u.segment.size = size;
    rec_event(&e, REC_STACKS);
}

void pool_api_mark(const char *text)
{
    tf_event e = { .kind = TF_EV_MARK };
    rec_event_text(&e, REC_STACKS, &e.u.mark.text, text ? text : "");
}

static const struct trace_api_v1 api_v1 = {
    .pool_register = pool_api_register,
    .pool_op_begin = pool_api_op_begin,
    .pool_op_end = pool_api_op_end,
    .pool_alloc = pool_api_alloc,
    .pool_free = pool_api_free,
    .pool_segment = pool_api_segment,
    .mark = pool_api_mark,
};

const struct trace_api_v1 *trace_api_v1(void)
{
    return &api_v1;
}
