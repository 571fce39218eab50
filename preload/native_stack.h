/*
 * native_stack.h - the calling thread's native stack, without the tracer's
 * own frames, and a per-thread memo of the stacks it recorded before.
 */
#ifndef TRACE_NATIVE_STACK_H
#define TRACE_NATIVE_STACK_H

#include <stdint.h>

#define NATIVE_STACK_MAX 256   /* the largest TRACE_STACK_DEPTH */
/* Room past the deepest stack for the tracer's own frames, which a walk
 * finds first and cuts off (native_stack.c). */
#define NATIVE_STACK_SPARE 18

/* Once at start: libunwind's per-thread cache, and where our own code is. */
void native_stack_init(void);

/* A captured stack: n frames, innermost first (as unw_backtrace gives them:
 * a caller's address is the instruction after its call).  When this thread
 * recorded the same stack before in the writer of this generation, id is its
 * interned id and ips is not filled; else id is 0 and ips holds the frames. */
typedef struct native_capture {
    int n;
    uint32_t id;
    uint64_t ips[NATIVE_STACK_MAX + NATIVE_STACK_SPARE];
} native_capture;

/* Up to depth frames.  nested: called from a signal handler that
 * interrupted a capture on this thread (the memo may be half written: it is
 * neither read nor filled).  Returns c->n. */
int native_stack_capture(native_capture *c, int depth, uint32_t generation, int nested);

/* The id the last capture with c->id == 0 was interned under, so the same
 * stack is known next time. */
void native_stack_remember(uint32_t generation, uint32_t id);

/* Once recording: an INFO record when libunwind keeps a descriptor of its own. */
void native_stack_note(void);

/* Nonzero when ip is inside libtrace.so. */
int native_stack_is_ours(uintptr_t ip);

/* Nonzero while this thread is in one of our walks (inside libunwind):
 * libunwind's own signal masking is skipped then (unwind_pipe.c). */
int native_stack_walking(void);

#endif
