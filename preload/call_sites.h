/*
 * call_sites.h - per caller, the answer an export of ours found for it:
 * which function that caller's call would have reached without us.
 *
 * cuda_symbols.c (the real CUDA function a call site binds to) and
 * python_api.c (a second libpython's own definition) ask the loader once
 * per call site and keep the answer here.  Call sites are few (one per
 * line of source that calls the function), so a row is a short array
 * searched from its start; the lookup takes no lock.
 *
 * A return address names a call site only while its object stays loaded:
 * a plugin closed, and another loaded at the same address, has the same
 * return addresses and another binding.  So the whole table holds for the
 * dlclose count it was filled under (dl_loader_unloads) and is emptied when
 * that count has moved: the common case stays one more load and compare.
 * Only dlclose counts: a dlopen unmaps nothing and changes no site's
 * binding, and every Python import would empty the table.  `epoch` is that
 * count << 1, odd while the table is being emptied; a lookup that saw the
 * epoch change under it (a seqlock) asks the loader instead.
 *
 * Failure policy: a full row, or a second thread filling the table at the
 * same moment, keeps nothing; the caller asks the loader again next time.
 * No allocation, no lock that can be left held (a try-lock, never waited
 * for): callable from any hook.
 */
#ifndef TRACE_CALL_SITES_H
#define TRACE_CALL_SITES_H

#include "dl_hooks.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct call_site {
    _Atomic uintptr_t ret;   /* published last */
    void *_Atomic answer;
} call_site;

typedef struct call_sites {
    call_site *slots;        /* rows of per_row, zeroed */
    int rows, per_row;
    _Atomic int lock;
    _Atomic unsigned long epoch;
} call_sites;

/* A table over a static array: CALL_SITES_INIT(array) for
 * `static call_site array[ROWS][PER_ROW]`. */
#define CALL_SITES_INIT(array)                                                \
    {                                                                         \
        .slots = &(array)[0][0],                                              \
        .rows = (int)(sizeof(array) / sizeof((array)[0])),                    \
        .per_row = (int)(sizeof((array)[0]) / sizeof((array)[0][0])),         \
    }

/* The dlclose count a lookup is made under: pass it to call_sites_keep. */
static inline unsigned long call_sites_now(void)
{
    return dl_loader_unloads() << 1;
}

/* The answer kept for ret in row, or NULL. */
static inline void *call_sites_find(call_sites *t, int row, const void *ret, unsigned long now)
{
    unsigned long epoch = atomic_load_explicit(&t->epoch, memory_order_acquire);
    if (epoch != now)
        return NULL;
    const call_site *s = t->slots + (long)row * t->per_row;
    for (int i = 0; i < t->per_row; i++) {
        uintptr_t key = atomic_load_explicit(&s[i].ret, memory_order_acquire);
        if (key == (uintptr_t)ret) {
            void *answer = atomic_load_explicit(&s[i].answer, memory_order_relaxed);
            /* Not emptied and filled again since the epoch was read. */
            atomic_thread_fence(memory_order_acquire);
            return atomic_load_explicit(&t->epoch, memory_order_relaxed) == epoch ? answer : NULL;
        }
        if (!key)
            break;
    }
    return NULL;
}

/* Keep answer (not NULL) for ret in row, found under `now`. */
void call_sites_keep(call_sites *t, int row, const void *ret, void *answer, unsigned long now);

#endif
