/* truth_n2.c - truth_n1.c rebuilt with other code, again without a
 * build-id: copied over truth_n1's file after the run, its symbols must not
 * be read as the recorded library's. */
#include <stdlib.h>
#include <string.h>

__attribute__((noinline, noclone)) static void *other_static_fn(size_t n)
{
    char *p = calloc(1, n + 16);
    memset(p + 8, 4, 64);
    return p;
}

__attribute__((noinline, noclone)) void *truth_alloc_n(size_t n)
{
    char *q = other_static_fn(n);
    memset(q, 5, 128);
    return q;
}
