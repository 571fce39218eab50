/*
 * walk.h - the event walker: nesting on each thread, worked out once.
 *
 * Every command reads a log the same way: events in seq order, each nested
 * on its thread inside the pool operations (pool_op_begin .. pool_op_end) and
 * collections (gc_start .. gc_stop) still open there.  The walker keeps those
 * open frames and hands each event, with the frames around it, to its
 * subscribers in the order they subscribed: the model-free checks, the model
 * driver, the report's accounting, explore's learning pass, the export.  None
 * of them keeps its own idea of nesting.
 *
 * It is fed one event at a time and never looks ahead, so it serves a log
 * being written as well as a file read whole.
 *
 * What the log says, and what the walker makes of it:
 *  - An event's parent is the seq of the innermost frame open on its thread
 *    when it was recorded.  Frames above that one were left without their
 *    end event (an operation that raised): they close first ("left").
 *    parent 0, or a frame that is not open (its start was lost with a
 *    damaged part of the log), leaves every frame of the thread.
 *  - pool_op_end closes the operation it names and whatever is still open
 *    inside it; gc_stop closes the innermost open collection and what is
 *    inside it.  An end whose frame is not open closes nothing.
 *  - An allocation or free that begins right inside an open allocation or
 *    free of the same pool means that one raised: the recorder keeps an
 *    operation open until its end, so what follows nests under it.  The
 *    open one closes first ("left") and the new one takes its place.  An
 *    `other` operation on either side nests as any operation does: a pool
 *    calling itself (its trim inside an allocation) is annotated so, and the
 *    hooks whose operations can be left open (CuPy's) make no `other`.
 *  - A thread holds at most RP_WALK_MAX_DEPTH frames (the recorder nests 64
 *    deep at most; a hostile log cannot make the walker's memory grow with
 *    its length): deeper openings are plain events.
 */
#ifndef RP_WALK_H
#define RP_WALK_H

#include <stdint.h>

#include "trace_format.h"

#define RP_WALK_MAX_DEPTH 1024

/* An operation or a collection open on a thread. */
typedef struct rp_frame {
    uint64_t seq, t_ns;
    uint32_t tid, kind;          /* TF_EV_POOL_OP_BEGIN or TF_EV_GC_START */
    uint32_t pool, op;           /* operations: pool, enum tf_pool_op; collections: 0 */
    uint64_t arg;                /* operations: size or pointer; collections: generation */
    uint32_t native_stack, py_stack;
    uint32_t depth;              /* frames outside it on its thread (0: outermost) */
    int in_gc;                   /* it, or a frame it is inside, is a collection */
    uint32_t pool_ctx;           /* the innermost operation it is, or is inside: its pool */
    uint64_t pool_ctx_seq;       /* ... and its seq */
    uint32_t gc_over_pool;       /* a collection it is (inside) ran inside an operation of this pool */
    uint64_t gc_over_seq;        /* ... that operation */
} rp_frame;

/* Where an event is: the frames open on its thread, outermost first. */
typedef struct rp_where {
    const rp_frame *frames;
    uint32_t depth;
    const rp_frame *up;          /* frames[depth - 1], or NULL at the top */
    uint32_t owner_pool;         /* up is an operation: its pool (a cudaMalloc there is
                                    that pool's segment); else 0 */
} rp_where;

/* How a frame closed. */
typedef enum rp_close {
    RP_CLOSE_END,                /* by its end event, or by the end event of a frame it is inside */
    RP_CLOSE_LEFT,               /* an event showed it was left without its end (it raised) */
    RP_CLOSE_EOF                 /* still open when the log ended */
} rp_close;

typedef struct rp_subscriber {
    void *ctx;
    /* Every event, after the frames it closes and before the frame it opens
     * (so a pool_op_begin's own frame is not in w).  Return nonzero to be
     * given nothing more (the driver stopped at a violation). */
    int (*event)(void *ctx, const tf_event *e, const rp_where *w);
    /* A frame closed, innermost first.  by: the event that closed it (NULL
     * at the end of the log); it comes to event() right after. */
    void (*closed)(void *ctx, const rp_frame *f, rp_close how, const tf_event *by);
} rp_subscriber;

typedef struct rp_walk rp_walk;

rp_walk *rp_walk_new(void);
void rp_walk_free(rp_walk *w);

/* Subscribers get each event in the order they were added (at most 8). */
void rp_walk_subscribe(rp_walk *w, const rp_subscriber *s);

/* Feed the next event (seq order).  Returns 1 once every subscriber is done:
 * the caller may stop reading. */
int rp_walk_event(rp_walk *w, const tf_event *e);

/* The log is over: close every frame still open (RP_CLOSE_EOF), threads in
 * order of first appearance. */
void rp_walk_end(rp_walk *w);

/* Checkpoints (state.h): the threads and their open frames, and back
 * into a walker that has not been fed yet (its subscribers are its
 * caller's).  load: 0, or -1 when the bytes do not read. */
struct rp_state_w;
struct rp_state_r;
void rp_walk_save(const rp_walk *w, struct rp_state_w *st);
int rp_walk_load(rp_walk *w, struct rp_state_r *st);
/* The frames' stack ids through m (a state that goes into another log;
 * NULL: forgotten). */
struct rp_stack_map;
void rp_walk_map_stacks(rp_walk *w, const struct rp_stack_map *m);

/* The innermost collection frame in w, or NULL. */
const rp_frame *rp_where_gc(const rp_where *w);

#endif
