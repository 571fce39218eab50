/*
 * embed_live - embed_rounds.c's rounds (Py_Initialize ... Py_FinalizeEx,
 * four times) under a counting wrapper on the object domain, set before the
 * first: after each round, "live N" says how many object blocks are still
 * allocated.  A round must not leave more than the one before (the preload
 * once kept 6 interned strings alive per round on 3.8 to 3.11, its own
 * references).  Built by test_interpreters.py.
 */
#include <Python.h>
#include <stdio.h>

static PyMemAllocatorEx inner;
static long live;

static void *count_malloc(void *ctx, size_t n)
{
    (void)ctx;
    void *p = inner.malloc(inner.ctx, n);
    live += p != NULL;
    return p;
}

static void *count_calloc(void *ctx, size_t nelem, size_t elsize)
{
    (void)ctx;
    void *p = inner.calloc(inner.ctx, nelem, elsize);
    live += p != NULL;
    return p;
}

static void *count_realloc(void *ctx, void *old, size_t n)
{
    (void)ctx;
    void *p = inner.realloc(inner.ctx, old, n);
    live += p != NULL && old == NULL;
    return p;
}

static void count_free(void *ctx, void *p)
{
    (void)ctx;
    live -= p != NULL;
    inner.free(inner.ctx, p);
}

static const char *round_code =
    "import gc, threading\n"
    "class N: pass\n"
    "for i in range(2000):\n"
    "    a = N(); b = N(); a.o = b; b.o = a\n"
    "gc.collect()\n";

int main(void)
{
    PyMemAllocatorEx counting = { NULL, count_malloc, count_calloc, count_realloc, count_free };
    PyMem_GetAllocator(PYMEM_DOMAIN_OBJ, &inner);
    PyMem_SetAllocator(PYMEM_DOMAIN_OBJ, &counting);
    for (int round = 0; round < 4; round++) {
        Py_Initialize();
        if (PyRun_SimpleString(round_code) != 0)
            return 1;
        if (Py_FinalizeEx() != 0)
            return 2;
        printf("live %ld\n", live);
    }
    return 0;
}
