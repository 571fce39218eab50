/*
 * test_alloc_sites.c - how preload/python_alloc_sites.c learns call sites
 * that make no GC object, against sites of our choosing.  The program
 * defines the symbols the module looks up (the four plain types, one plain
 * allocator) and exports them (-rdynamic), as an interpreter would; blocks
 * are arrays shaped like what each kind of site makes.  The wrapper's order
 * is kept: observe (look at the previous call's block), then ask.
 *
 *  - a site making key tables is left out, marked, after LEARN_AFTER (48)
 *    recorded blocks; one making strs is left out plain; one making
 *    something that looks like a GC header is recorded for good at once;
 *  - an OBJ-domain free between a block and the look at it means no look;
 *  - a site inside a named plain allocator is left out from its first call;
 *    one inside _PyObject_New (objects without GC) too, marked; one inside
 *    a general allocator (PyType_GenericAlloc) is recorded, never learnt;
 *  - sites whose addresses share a home slot, two and PROBES (4) of them,
 *    allocating in turn, are each learnt once: with one slot per site they
 *    took it from each other at every call and none was ever decided.
 */
#include "python_alloc_sites.h"
#include "python_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

/* The module finds the interpreter's symbols through py_sym
 * (python_api.c): here, this program's own. */
void *py_sym(const char *name)
{
    return dlsym(RTLD_DEFAULT, name);
}

/* What an interpreter exports, as far as the module looks. */
struct fake_type { uint64_t words[8]; };
struct fake_type PyUnicode_Type, PyLong_Type, PyFloat_Type, PyBytes_Type;
__attribute__((noinline, used)) void *PyUnicode_New(long n, unsigned max)
{
    static volatile long sink;
    sink = n + max;
    return (void *)&sink;
}

/* An allocator of objects without GC, and a general one. */
__attribute__((noinline, used)) void *_PyObject_New(void *type)
{
    static volatile void *sink;
    sink = type;
    return (void *)&sink;
}
__attribute__((noinline, used)) void *PyType_GenericAlloc(void *type, long n)
{
    static volatile long sink;
    sink = (long)(uintptr_t)type + n;
    return (void *)&sink;
}

static int failures;

static void expect(int ok, const char *what)
{
    if (!ok) {
        printf("FAIL: %s\n", what);
        failures++;
    }
}

/* Fake call sites: addresses no named range covers. */
static char sites[1 << 16];

/* One wrapper call: look at the previous block, then ask about this one
 * (of block_size bytes). */
static size_t block_size = 32;
static unsigned call(uintptr_t ra, const void *block)
{
    py_alloc_sites_observe();
    return py_alloc_site_verdict(ra, block, block_size);
}

static uint64_t key_table[4] = { 1, 8, 0, 0 };   /* refcount 1, 8 slots (3.8-3.10) */
static uint64_t str_object[4];                    /* refcount, &PyUnicode_Type */
static uint64_t gc_object[4];                     /* a GC header: two links */

/* n calls at `ra` with `block`: how many were recorded (verdict 0), and the last verdict. */
static unsigned run(uintptr_t ra, const void *block, int n, int *recorded)
{
    unsigned v = 0;
    *recorded = 0;
    for (int i = 0; i < n; i++)
        if ((v = call(ra, block)) == 0)
            (*recorded)++;
    return v;
}

/* `count` distinct sites with the same home slot as `base`. */
static int colliding(uintptr_t base, uintptr_t *out, int count)
{
    int n = 0;
    uint32_t home = py_alloc_verdict_slot(base);
    for (uintptr_t a = base; n < count && a < (uintptr_t)sites + sizeof sites; a++)
        if (py_alloc_verdict_slot(a) == home)
            out[n++] = a;
    return n == count;
}

int main(void)
{
    str_object[0] = 1;
    str_object[1] = (uint64_t)(uintptr_t)&PyUnicode_Type;
    gc_object[0] = (uint64_t)(uintptr_t)&gc_object[2];
    gc_object[1] = (uint64_t)(uintptr_t)&gc_object[2];
    if (py_alloc_sites_install(1) == 0) {
        printf("FAIL: py_alloc_sites_install found no plain allocator (is the program linked with -rdynamic?)\n");
        return 1;
    }
    int recorded;

    unsigned v = run((uintptr_t)&sites[1], key_table, 100, &recorded);
    expect(v == PY_ALLOC_V_NOTOBJ, "a site of key tables is left out, marked");
    expect(recorded == 48, "a site of key tables is recorded while learnt, 48 times");
    printf("key tables: verdict %u, %d of 100 recorded\n", v, recorded);

    v = run((uintptr_t)&sites[2], str_object, 100, &recorded);
    expect(v == PY_ALLOC_V_PLAIN && recorded == 48, "a site of strs is left out after 48");

    v = run((uintptr_t)&sites[3], gc_object, 100, &recorded);
    expect(v == 0 && recorded == 100, "a site of GC objects is recorded");
    (void)call((uintptr_t)&sites[4], key_table);     /* learns sites[3]'s last block */

    /* 8-byte blocks (PYTHONMALLOC=malloc): no object, and no second word
     * to read (ASan saw the read past such a block): each left out, marked,
     * from the first, and the site not learnt from them: a GC object it
     * makes later is recorded. */
    static uint64_t small_block[1];
    block_size = sizeof small_block;
    v = run((uintptr_t)&sites[6], small_block, 100, &recorded);
    block_size = 32;
    expect(v == PY_ALLOC_V_NOTOBJ && recorded == 0, "every 8-byte block is left out, marked");
    v = run((uintptr_t)&sites[6], gc_object, 100, &recorded);
    expect(v == 0 && recorded == 100, "a site of 8-byte blocks that makes GC objects records them");
    (void)call((uintptr_t)&sites[4], key_table);     /* learns sites[6]'s last block */

    /* Key tables the first look missed, each of which made its site
     * recorded for good (and its tables counted as collected objects):
     * a 3.12 copy of a table the specialiser versioned, a 3.10 table of
     * 8192 slots, and a table looked at while it is freed (its count
     * already 0).  Their counts add up to two thirds of the slots.  A fresh
     * GC object's header (zeros) and a count-0 block whose counts do not
     * add up are objects. */
    static uint64_t versioned[4] = { 1, 0x123400010e0dull, 461, 5000 };
    static uint64_t big_310[5] = { 1, 8192, 0x7f0012345678ull, 461, 5000 };
    static uint64_t being_freed[4] = { 0, 0x10404, 1, 9 };
    static uint64_t fresh_gc[4] = { 0, 0, 0, 0 };
    static uint64_t counts_off[4] = { 0, 0x10404, 1, 8 };
    struct { const uint64_t *block; size_t size; unsigned want; const char *what; } tables[] = {
        { versioned, 32, PY_ALLOC_V_NOTOBJ, "a 3.12 table with a version" },
        { big_310, 40, PY_ALLOC_V_NOTOBJ, "a 3.10 table of 8192 slots" },
        { being_freed, 32, PY_ALLOC_V_NOTOBJ, "a table whose count fell to 0" },
        { fresh_gc, 32, 0, "a fresh GC object (a header of zeros)" },
        { counts_off, 32, 0, "a count of 0 without a table's counts" },
        { big_310, 32, 0, "a 3.10-shaped block too small for the counts" },
    };
    for (unsigned i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        uintptr_t ra = (uintptr_t)&sites[7 + i];
        block_size = tables[i].size;
        v = run(ra, tables[i].block, 100, &recorded);
        (void)call((uintptr_t)&sites[4], key_table);     /* learns the last block */
        v = call(ra, tables[i].block);
        expect(v == tables[i].want, tables[i].what);
        printf("%s: verdict %u, %d of 100 recorded\n", tables[i].what, v, recorded);
    }
    block_size = 32;

    /* A free between the block and the look: no look, nothing learnt. */
    for (int i = 0; i < 100; i++) {
        v = call((uintptr_t)&sites[5], key_table);
        py_alloc_sites_freeing();
    }
    expect(v == 0, "a site whose blocks may have been freed before the look is not learnt");

    uintptr_t in_plain = (uintptr_t)&PyUnicode_New + 2;
    v = run(in_plain, gc_object, 1, &recorded);
    expect(v == PY_ALLOC_V_PLAIN && recorded == 0, "a named plain allocator's site is left out at once");

    expect(py_alloc_sites_nongc() == 1, "_PyObject_New is found as an allocator of objects without GC");
    v = run((uintptr_t)&_PyObject_New + 2, gc_object, 1, &recorded);
    expect(v == PY_ALLOC_V_NOTOBJ && recorded == 0,
           "a site in _PyObject_New is left out at once, marked (its free cannot say what it was)");
    v = run((uintptr_t)&PyType_GenericAlloc + 2, str_object, 100, &recorded);
    expect(v == 0 && recorded == 100, "a site in a general allocator is recorded, never learnt");

    /* Two, then four sites with one home slot, in turn. */
    for (int count = 2; count <= 4; count += 2) {
        uintptr_t same[4];
        if (!colliding((uintptr_t)&sites[1024 * count], same, count)) {
            printf("FAIL: no %d sites with one home slot in %zu addresses\n", count, sizeof sites);
            return 1;
        }
        int rec[4] = { 0 };
        unsigned last[4] = { 0 };
        for (int round = 0; round < 100; round++)
            for (int s = 0; s < count; s++)
                if ((last[s] = call(same[s], key_table)) == 0)
                    rec[s]++;
        for (int s = 0; s < count; s++) {
            char what[160];
            snprintf(what, sizeof what, "%d sites sharing home slot %u: site %d is learnt (verdict %u, "
                     "%d of 100 recorded)", count, py_alloc_verdict_slot(same[0]), s, last[s], rec[s]);
            expect(last[s] == PY_ALLOC_V_NOTOBJ && rec[s] == 48, what);
        }
    }

    if (failures)
        printf("%d check(s) failed\n", failures);
    else
        printf("all checks passed\n");
    return failures ? 1 : 0;
}
