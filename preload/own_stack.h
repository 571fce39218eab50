/*
 * own_stack.h - run a function on a stack of our own.
 *
 * The ways a process ends (endings.c) compress and write the log's tail,
 * which takes tens of KiB of stack; they may be reached on an app's 8 KiB
 * alternate signal stack, or a thread stack almost used up.  So they switch
 * to a stack mapped at start, and use the app's stack only for the few
 * bytes it takes to get there.
 */
#ifndef TRACE_OWN_STACK_H
#define TRACE_OWN_STACK_H

#include <stddef.h>

/* At start: map the stack (guard page below it). */
void own_stack_init(void);

/* fn(arg) on our stack; one thread at a time (the caller serialises), not
 * nested.  Without a stack (the mapping failed), on the caller's. */
void own_stack_run(void (*fn)(void *), void *arg);

/* Call fn(arg) with the stack pointer at top (16-byte aligned), then come
 * back (hook_stack.c uses it too). */
void trace_run_on_stack(void (*fn)(void *), void *arg, void *top)
    __attribute__((visibility("hidden")));

#endif
