/*
 * thread_stack.h - the calling thread's own stack: how far it reaches,
 * found with system calls alone.
 *
 * Two users ask: the hooks, whether the recorder's work fits below the
 * stack pointer (hook_stack.h), and the stack memos, whether a frame's
 * slots may be read (native_stack.c).  Each kept its own copy of the bounds
 * and found them its own way; one thread's stack is one set of bounds.
 */
#ifndef TRACE_THREAD_STACK_H
#define TRACE_THREAD_STACK_H

#include <stdint.h>

/* [thread_stack_lo, thread_stack_hi): readable memory of this thread's
 * stack, as far down as has been asked; hi == 0: not known yet. */
extern __thread uintptr_t thread_stack_lo __attribute__((tls_model("initial-exec")));
extern __thread uintptr_t thread_stack_hi __attribute__((tls_model("initial-exec")));

/* Once at start, on the main thread if it is the one loading us: its
 * stack's bounds (reading /proc/self/maps is not something to do in a
 * hook). */
void thread_stack_init(void);

/* Whether `here` (a frame's address) is on this thread's own stack; the
 * stack is then checked down to `want` (at most here), or to its end:
 * thread_stack_lo <= want says it reaches that far.  The first call on a
 * thread asks the kernel, one deeper than any before asks again. */
int thread_stack_reach_slow(uintptr_t here, uintptr_t want);
static inline __attribute__((always_inline)) int thread_stack_reach(uintptr_t here, uintptr_t want)
{
    /* Inside what is known already: every capture asks (two compares). */
    if (__builtin_expect(want >= thread_stack_lo && here < thread_stack_hi && want <= here, 1))
        return 1;
    return thread_stack_reach_slow(here, want);
}

#endif
