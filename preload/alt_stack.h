/*
 * alt_stack.h - an alternate signal stack for a thread that has none, so
 * that a stack overflow still ends in a whole log.
 *
 * A thread that runs off the end of its stack faults on the page below it.
 * The kernel must push the handler's frame somewhere: with no alternate
 * signal stack the only stack is the one that overflowed, so it kills the
 * process as if SIGSEGV's action were the default, and our handler
 * (ending_signals.c, installed with SA_ONSTACK) never runs.  The log was
 * left without END and without the events still in memory (up to 100 ms
 * of them).  A Python program with sys.setrecursionlimit raised dies that
 * way (deep recursion in the interpreter, or in repr, json, pickle of a
 * deeply nested object), as does any C program that recurses too deep.
 *
 * So a thread gets one of ours where it has none: the main thread at start,
 * every other thread at its first recorded event (no pthread_create hook
 * exists); it lives in the thread's mapping of the tracer's (thread_mem.h)
 * and goes with it at the thread's exit.  An alternate stack the program
 * (or a runtime: ASan, Rust, Go) set is never replaced; one the program
 * sets later replaces ours as it would have replaced none, and
 * faulthandler.enable(), which saves the one it finds, puts ours back when
 * it is done.  A program that asks (sigaltstack(NULL, &old)) sees ours: a
 * handler it installs with SA_ONSTACK runs on it, with ALT_STACK_SIZE.
 *
 * Our handler needs little of it: the kernel's frame (up to 12 KiB with
 * AMX state saved), then a few hundred bytes before it switches to
 * own_stack.h's stack.
 *
 * Failure policy: best effort and silent; where a step fails the thread
 * goes without, as before.
 */
#ifndef TRACE_ALT_STACK_H
#define TRACE_ALT_STACK_H

/* Over five times the largest kernel frame known to us (AT_MINSIGSTKSZ:
 * 11,952 bytes on a Xeon with AMX, 3,376 on an AMD EPYC), and room for a
 * program's own SA_ONSTACK handler (Go's signal stacks are 32 KiB).  Our
 * handler with the kernel's frame took 4,080 bytes of it on that Xeon
 * (tests/preload/overflow.c, painted).  A guard page lies below it. */
#define ALT_STACK_SIZE (64u * 1024)

/* Make [lo, lo + ALT_STACK_SIZE) the calling thread's alternate signal
 * stack if it has none.  1 if it did. */
int alt_stack_take(void *lo);

/* The memory at lo is about to be given back: the calling thread's
 * alternate stack is switched off if it is still that one.  0 when it
 * cannot be (the thread is running on it): the memory must stay. */
int alt_stack_release(void *lo);

#endif
