/*
 * real_fns.c - the definitions our interposed libc functions hide (see
 * real_fns.h).
 */
#include "real_fns.h"
#include "dl_hooks.h"

#include <dlfcn.h>
#include <stdatomic.h>

static const char *const names[REAL_FN_COUNT] = {
#define REAL_NAME(name) [REAL_##name] = #name,
    REAL_FNS(REAL_NAME)
#undef REAL_NAME
};
static void *_Atomic fns[REAL_FN_COUNT];

void *real_fn(enum real_fn f)
{
    void *fn = atomic_load_explicit(&fns[f], memory_order_relaxed);
    if (!fn) {
        fn = dl_real_dlsym(RTLD_NEXT, names[f]);
        atomic_store_explicit(&fns[f], fn, memory_order_relaxed);
    }
    return fn;
}

void real_fns_init(void)
{
    for (int f = 0; f < REAL_FN_COUNT; f++)
        real_fn((enum real_fn)f);
}
