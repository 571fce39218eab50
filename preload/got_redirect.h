/*
 * got_redirect.h - send loaded objects' calls of a function to ours, where
 * symbol interposition cannot (the program itself defines the function).
 *
 * Failure policy: best effort, never fatal.  An object whose dynamic section
 * cannot be read, or whose slot cannot be made writable, keeps calling the
 * original; the count returned says how many slots now point at ours.
 */
#ifndef TRACE_GOT_REDIRECT_H
#define TRACE_GOT_REDIRECT_H

#include <stdint.h>

/* One function to redirect: calls that the dynamic linker bound to `from`
 * (the definition that won the lookup) go to `to` instead. */
typedef struct got_target {
    const char *name;
    void *from;
    void *to;
} got_target;

/* Whether this architecture's relocations are understood (x86-64, AArch64). */
int got_redirect_supported(void);

/* Rewrite the GOT slots (JUMP_SLOT and GLOB_DAT relocations) of every loaded
 * object, other than the program and libtrace.so, that import one of the
 * targets by name and hold its `from` address, or the address of their own
 * PLT (lazy binding, not resolved yet).  Objects seen by an earlier call are
 * skipped until one is unloaded, except those with a slot for a target in
 * neither state (bound elsewhere, or not relocated yet: another thread's
 * dlopen under way), looked at again each time.  Returns the number of slots
 * rewritten.
 * Safe to call from several threads: the loader's lock serialises it. */
unsigned got_redirect(const got_target *targets, unsigned n);

/* The same in the one object loaded at base, whatever earlier calls saw, for
 * targets the object defines itself (`to`, its own definition): a slot
 * holding `from` or, lazily bound, the object's own PLT is rewritten. */
unsigned got_redirect_object(uintptr_t base, const got_target *targets, unsigned n);

#endif
