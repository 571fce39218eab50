/*
 * native_stack.h - the calling thread's native stack, without the tracer's
 * own frames.
 */
#ifndef TRACE_NATIVE_STACK_H
#define TRACE_NATIVE_STACK_H

#include <stdint.h>

#define NATIVE_STACK_MAX 256   /* the largest TRACE_STACK_DEPTH */

/* Once at start: libunwind's per-thread cache, and where our own code is. */
void native_stack_init(void);

/* Up to depth return addresses, innermost first (as unw_backtrace gives
 * them: a caller's address is the instruction after its call).  Returns the
 * number written. */
int native_stack_capture(uint64_t *ips, int depth);

/* Once recording: an INFO record when libunwind keeps a descriptor of its own. */
void native_stack_note(void);

/* Nonzero when ip is inside libtrace.so. */
int native_stack_is_ours(uintptr_t ip);

#endif
