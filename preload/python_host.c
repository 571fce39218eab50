/*
 * python_host.c - large host buffers from the Python allocator domains:
 * host_alloc when one of at least TRACE_HOST_THRESHOLD bytes is allocated,
 * host_free when it is released.  A collection that frees one (the ctypes.cast
 * story: a cycle keeps a 10 MiB bytearray alive until the GC runs) shows it
 * nested under its gc_start through the recorder's parent mechanism.
 *
 * The set of live large pointers is consulted on every free, from any thread
 * (the RAW domain needs no GIL), so it is lock-free: nothing a signal or a
 * fork could leave held.  A pointer lives in a fixed window of slots after its
 * hash; a per-window count lets the common case (a small block) answer with
 * one load.  When a window is full the buffer is simply not tracked, and an
 * INFO record says so once.
 */
#include "python_internal.h"
#include "recorder.h"

#include <stdatomic.h>

#define LIVE_SLOTS 4096u          /* power of two */
#define WINDOW 16u                /* slots probed after the hash */

static _Atomic uintptr_t live_ptr[LIVE_SLOTS + WINDOW];
static uint64_t live_size[LIVE_SLOTS + WINDOW];
static _Atomic uint32_t window_live[LIVE_SLOTS];
static atomic_flag said_untracked = ATOMIC_FLAG_INIT;
_Atomic unsigned python_host_live;     /* buffers in the set */

static uint32_t window_of(const void *p)
{
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 52) & (LIVE_SLOTS - 1);
}

static int live_insert(void *p, uint64_t size)
{
    uint32_t w = window_of(p);
    atomic_fetch_add(&window_live[w], 1);
    for (uint32_t i = 0; i < WINDOW; i++) {
        uintptr_t empty = 0;
        if (atomic_compare_exchange_strong(&live_ptr[w + i], &empty, (uintptr_t)p)) {
            live_size[w + i] = size;
            atomic_fetch_add(&python_host_live, 1);
            return 1;
        }
    }
    atomic_fetch_sub(&window_live[w], 1);
    if (!atomic_flag_test_and_set(&said_untracked))
        rec_info("host_buffers", "some large buffers not tracked: too many live at once");
    return 0;
}

/* Returns 1 and the size when p was a live large buffer. */
static int live_remove(void *p, uint64_t *size)
{
    uint32_t w = window_of(p);
    if (atomic_load_explicit(&window_live[w], memory_order_relaxed) == 0)
        return 0;
    for (uint32_t i = 0; i < WINDOW; i++) {
        uintptr_t expected = (uintptr_t)p;
        if (atomic_load_explicit(&live_ptr[w + i], memory_order_relaxed) != expected)
            continue;
        *size = live_size[w + i];
        if (atomic_compare_exchange_strong(&live_ptr[w + i], &expected, 0)) {
            atomic_fetch_sub(&window_live[w], 1);
            atomic_fetch_sub(&python_host_live, 1);
            return 1;
        }
    }
    return 0;
}

void python_host_allocated(int domain, void *p, size_t size)
{
    if (!live_insert(p, size))
        return;
    tf_event e = { .kind = TF_EV_HOST_ALLOC };
    e.u.host.domain = (uint32_t)domain + 1;   /* TF_HOST_RAW/MEM/OBJ */
    e.u.host.ptr = (uint64_t)(uintptr_t)p;
    e.u.host.size = size;
    rec_event(&e, REC_STACKS);
}

uint64_t python_host_releasing(int domain, void *p)
{
    uint64_t size;
    if (!live_remove(p, &size))
        return 0;
    tf_event e = { .kind = TF_EV_HOST_FREE };
    e.u.host.domain = (uint32_t)domain + 1;
    e.u.host.ptr = (uint64_t)(uintptr_t)p;
    e.u.host.size = size;
    rec_event(&e, REC_STACKS);
    return size;
}
