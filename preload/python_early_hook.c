/*
 * python_early_hook.c - handing our audit-hook entry back to the allocator
 * that made it.
 *
 * The constructor registers the audit hook before the interpreter's
 * pre-initialisation, so CPython allocates the hook's list entry with the
 * raw allocator of that moment: plain malloc in a release build, the debug
 * hooks over malloc in a debug build (python3.11-dbg), whose blocks start
 * 16 bytes into malloc's.  Pre-initialisation may then install another raw
 * allocator: the debug one (PYTHONMALLOC=debug, PYTHONDEVMODE=1, -X dev) or
 * mimalloc in a release build, plain malloc in a debug build under
 * PYTHONMALLOC=malloc.  At exit, _PySys_ClearAuditHooks frees every entry
 * with PyMem_RawFree: the debug allocator, finding no header of its own,
 * aborts the process, and so does libc's free given a debug block.  So the
 * allocator in place is read just before each registration
 * (python_early_hook_registering), and the entry goes back to it.
 *
 * _PySys_ClearAuditHooks raises the audit event "cpython._PySys_ClearAuditHooks"
 * just before it frees the entries (3.8 to 3.13).  On that event we put a
 * wrapper on the raw domain whose free() recognises our entry (its hook
 * function and user data are ours) and gives it to libc's free; every other
 * block goes to the allocator it came from.  Only the next few frees are
 * inspected, so the wrapper turns into a plain forwarder at once.
 */
#include "python_internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Frees inspected after the event: the entries are freed right after it. */
#define FREES_TO_INSPECT 64

static char entry_cookie;               /* our entry's userData */
static py_audit_hook our_hook;
static py_allocator raw_before;
/* Who allocated our entry: the raw allocator in place when the hook was
 * registered (libc's free if none was read: free is NULL then). */
static py_allocator entry_allocator;
static atomic_int frees_to_inspect;

void *python_early_hook_user_data(void)
{
    return &entry_cookie;
}

/* _Py_AuditHookEntry is { next, hookCFunction, userData } in 3.8 to 3.13.
 * Only blocks freed right after the event are read, which are the hook
 * entries themselves (24 bytes). */
__attribute__((no_sanitize("address")))
static int is_our_entry(void *p)
{
    void *const *entry = p;
    return entry[1] == *(void **)&our_hook && entry[2] == (void *)&entry_cookie;
}

/* Set at a round's end, cleared by python_between_rounds_look once it has
 * its answer. */
static atomic_int between_rounds;

static inline void look_between_rounds(void)
{
    if (__builtin_expect(atomic_load_explicit(&between_rounds, memory_order_relaxed), 0))
        python_between_rounds_look();
}

void python_early_hook_round_known(void)
{
    atomic_store(&between_rounds, 0);
}

static void *forward_malloc(void *ctx, size_t size)
{
    (void)ctx;
    look_between_rounds();
    return raw_before.malloc(raw_before.ctx, size);
}

static void *forward_calloc(void *ctx, size_t nelem, size_t elsize)
{
    (void)ctx;
    look_between_rounds();
    return raw_before.calloc(raw_before.ctx, nelem, elsize);
}

static void *forward_realloc(void *ctx, void *p, size_t size)
{
    (void)ctx;
    return raw_before.realloc(raw_before.ctx, p, size);
}

static void free_entry_with_libc(void *ctx, void *p)
{
    (void)ctx;
    if (p && atomic_load(&frees_to_inspect) > 0 && atomic_fetch_sub(&frees_to_inspect, 1) > 0 &&
        is_our_entry(p)) {
        atomic_store(&frees_to_inspect, 0);
        if (entry_allocator.free)
            entry_allocator.free(entry_allocator.ctx, p);
        else
            free(p);
        return;
    }
    raw_before.free(raw_before.ctx, p);
}

void python_early_hook_on_audit_event(const char *event, py_audit_hook hook)
{
    if (strcmp(event, "cpython._PySys_ClearAuditHooks") != 0)
        return;
    atomic_store(&between_rounds, 1);
    /* Once per round (an embedding program may initialise Python again, and
     * registers the hook again): unless the rescue is still in place. */
    py_allocator current;
    py.PyMem_GetAllocator(PY_DOMAIN_RAW, &current);
    if (current.free == free_entry_with_libc)
        return;
    our_hook = hook;
    raw_before = current;
    atomic_store(&frees_to_inspect, FREES_TO_INSPECT);
    py_allocator rescue = { NULL, forward_malloc, forward_calloc, forward_realloc,
                            free_entry_with_libc };
    py.PyMem_SetAllocator(PY_DOMAIN_RAW, &rescue);
}

void python_early_hook_see_through(py_allocator *a)
{
    if (a->free == free_entry_with_libc)
        *a = raw_before;
}

void python_early_hook_registering(void)
{
    py_allocator a;
    py.PyMem_GetAllocator(PY_DOMAIN_RAW, &a);
    python_early_hook_see_through(&a);
    entry_allocator = a;
}
