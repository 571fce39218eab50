/*
 * unwind_lib.h - our libunwind, opened by its path at start (unwind_lib.c):
 * the stack walks call it through these pointers.
 */
#ifndef TRACE_UNWIND_LIB_H
#define TRACE_UNWIND_LIB_H

#define UNW_LOCAL_ONLY
#include <libunwind.h>

/* What the walks use.  The names are the header's (with UNW_LOCAL_ONLY,
 * unw_step is _ULx86_64_step and so on); nothing here refers to a symbol
 * of libunwind, so libtrace.so has no DT_NEEDED on it. */
struct unwind_lib {
    __typeof__(&unw_backtrace) backtrace;
    __typeof__(&unw_init_local) init_local;
    __typeof__(&unw_get_reg) get_reg;
    __typeof__(&unw_step) step;
    __typeof__(&unw_set_caching_policy) set_caching_policy;
    unw_addr_space_t *local_addr_space;
#if defined(__x86_64__)
    __typeof__(&unw_tdep_getcontext) getcontext;
#endif
};

extern struct unwind_lib unwind_lib __attribute__((visibility("hidden")));

#if defined(__x86_64__)
#define UNWIND_GETCONTEXT(ctx) unwind_lib.getcontext(ctx)
#else
/* Elsewhere (aarch64) unw_getcontext is inline assembly, no call. */
#define UNWIND_GETCONTEXT(ctx) unw_getcontext(ctx)
#endif

/* Once at start, before any walk.  Returns 1 when every pointer is set;
 * 0 when no copy could be opened (native stacks are then left out, and
 * unwind_lib_problem says why). */
int unwind_lib_load(void);

/* The loader's record of the copy in use (dlinfo RTLD_DI_LINKMAP), or NULL
 * when none is open. */
struct link_map *unwind_lib_map(void);

/* Why unwind_lib_load failed, for an INFO record; NULL when it did not. */
const char *unwind_lib_problem(void);

#endif
