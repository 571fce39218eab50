/*
 * python_code_deaths.c - which code objects died, for the stack caches.
 *
 * python_stack.c caches what a code object's address means (its file,
 * function and lines) so that an event does not read them again.  CPython
 * gives a dead code object's memory, and its file and function name
 * strings', to the next ones of the same size: exec(compile(...)) in a loop
 * puts every round's code where the previous round's was.  Comparing the
 * cached objects' addresses cannot tell the rounds apart; reading the
 * strings' text at every event costs what the caches save.  So we watch the
 * deaths themselves: PyCode_Type's tp_dealloc is wrapped (one pointer
 * written at attach, the same on 3.8 to 3.13 where code watchers exist only
 * from 3.12), and each death is written to a ring that the caches read
 * under the recorder's lock before they answer.
 *
 * The wrapper runs inside the interpreter's deallocation, with the GIL:
 * it allocates nothing, takes no lock and calls nothing but the real
 * deallocator.  Deallocations may run on two threads at once (a
 * subinterpreter with its own GIL, 3.12+), so an entry is claimed with an
 * atomic add and published with its index, like a sequence lock: a reader
 * that finds an entry not yet (or no longer) holding the death it wants
 * says so, and the caches then forget everything, which is always right.
 */
#include "python_internal.h"

#include <stdatomic.h>
#include <string.h>

/* PyTypeObject on 64-bit CPython 3.8 to 3.13: PyObject_VAR_HEAD (24 bytes),
 * tp_name, tp_basicsize, tp_itemsize, tp_dealloc. */
#define TYPE_NAME 24
#define TYPE_DEALLOC 48

typedef struct grave {
    _Atomic uint64_t seq;      /* index + 1 of the death it holds; 0 while written */
    _Atomic uintptr_t code;
} grave;

static grave graves[CODE_DEATHS_KEPT];
_Atomic uint64_t code_deaths_claimed;
/* Where no slot is wrapped (not yet, or the libpython unloaded), a word
 * that holds no deallocator: code_deaths_watching is then a load and a
 * compare with no test of the slot's address (2 instructions an event). */
static code_deaths_destructor no_slot;
code_deaths_destructor *code_deaths_slot = &no_slot;
static code_deaths_destructor real_dealloc;

void code_deaths_dealloc(void *code)
{
    uint64_t i = atomic_fetch_add_explicit(&code_deaths_claimed, 1, memory_order_acq_rel);
    grave *g = &graves[i % CODE_DEATHS_KEPT];
    atomic_store_explicit(&g->seq, 0, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&g->code, (uintptr_t)code, memory_order_relaxed);
    atomic_store_explicit(&g->seq, i + 1, memory_order_release);
    real_dealloc(code);         /* only now may the address be reused */
}

int code_deaths_install(void)
{
    if (!py.code_type)
        return 0;
    /* The header's size is what every offset above rests on: tp_name must
     * be "code" where we expect it. */
    const char *name = *(const char **)((char *)py.code_type + TYPE_NAME);
    if (!name || strcmp(name, "code") != 0)
        return 0;
    code_deaths_destructor *slot = (code_deaths_destructor *)((char *)py.code_type + TYPE_DEALLOC);
    code_deaths_destructor now = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (now != code_deaths_dealloc) {   /* else an embedder's next round: PyCode_Type is static */
        if (!now)
            return 0;
        real_dealloc = now;
        __atomic_store_n(slot, code_deaths_dealloc, __ATOMIC_RELEASE);
    }
    code_deaths_slot = slot;
    return 1;
}

int code_deaths_get(uint64_t i, uintptr_t *code)
{
    grave *g = &graves[i % CODE_DEATHS_KEPT];
    if (atomic_load_explicit(&g->seq, memory_order_acquire) != i + 1)
        return 0;
    uintptr_t c = atomic_load_explicit(&g->code, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&g->seq, memory_order_relaxed) != i + 1)
        return 0;
    *code = c;
    return 1;
}

void code_deaths_forget(void)
{
    __atomic_store_n(&code_deaths_slot, &no_slot, __ATOMIC_RELEASE);
}
