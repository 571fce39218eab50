/*
 * call_sites.c - the answers kept per caller (see call_sites.h).
 */
#include "call_sites.h"

/* Under the lock: forget every call site (their objects may be gone). */
static void empty(call_sites *t, unsigned long now)
{
    atomic_store_explicit(&t->epoch, atomic_load_explicit(&t->epoch, memory_order_relaxed) | 1,
                          memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    for (int r = 0; r < t->rows; r++) {
        call_site *s = t->slots + (long)r * t->per_row;
        for (int i = 0; i < t->per_row && atomic_load_explicit(&s[i].ret, memory_order_relaxed); i++)
            atomic_store_explicit(&s[i].ret, 0, memory_order_relaxed);
    }
    atomic_store_explicit(&t->epoch, now, memory_order_release);
}

void call_sites_keep(call_sites *t, int row, const void *ret, void *answer, unsigned long now)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&t->lock, &expected, 1))
        return;
    /* A dlclose while the caller asked the loader: its answer may be stale. */
    if (call_sites_now() == now) {
        if (atomic_load_explicit(&t->epoch, memory_order_relaxed) != now)
            empty(t, now);
        call_site *s = t->slots + (long)row * t->per_row;
        for (int i = 0; i < t->per_row; i++) {
            uintptr_t key = atomic_load_explicit(&s[i].ret, memory_order_relaxed);
            if (key == (uintptr_t)ret)
                break;   /* another thread's, just now */
            if (!key) {
                atomic_store_explicit(&s[i].answer, answer, memory_order_relaxed);
                atomic_store_explicit(&s[i].ret, (uintptr_t)ret, memory_order_release);
                break;
            }
        }
    }
    atomic_store(&t->lock, 0);
}
