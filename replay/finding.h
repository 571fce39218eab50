/*
 * finding.h - what a check reports: a violation or a warning, with the
 * events involved, by seq and stack ids (resolved when printed).
 */
#ifndef RP_FINDING_H
#define RP_FINDING_H

#include <stdint.h>

typedef struct rp_site {
    uint64_t seq;             /* 0: none */
    uint32_t tid, native_stack, py_stack;
} rp_site;

typedef struct rp_finding {
    char invariant[40];       /* short stable name: "overlap", "sorted_index" */
    char message[480];
    rp_site at;               /* the event that broke it */
    rp_site other;            /* the earlier event it conflicts with */
} rp_finding;

/* Stack ids of one log as another log numbers them (a state written into
 * minimize's reproducer, whose stacks are interned afresh).  A NULL map
 * turns every id into 0: no stack, never another's. */
typedef struct rp_stack_map {
    uint32_t (*native)(void *ctx, uint32_t id);
    uint32_t (*py)(void *ctx, uint32_t id);
    void *ctx;
} rp_stack_map;

static inline uint32_t rp_map_native(const rp_stack_map *m, uint32_t id)
{
    return id && m ? m->native(m->ctx, id) : 0;
}

static inline uint32_t rp_map_py(const rp_stack_map *m, uint32_t id)
{
    return id && m ? m->py(m->ctx, id) : 0;
}

static inline void rp_site_map(rp_site *s, const rp_stack_map *m)
{
    s->native_stack = rp_map_native(m, s->native_stack);
    s->py_stack = rp_map_py(m, s->py_stack);
}

#endif
