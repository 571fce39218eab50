/* truth_n1.c - a library linked without a build-id (--build-id=none). */
#include <stdlib.h>
#include <string.h>

__attribute__((noinline, noclone)) void *truth_alloc_n(size_t n)
{
    char *p = malloc(n); /* TRUTH_N_CALL */
    memset(p, 3, 64);
    return p;
}
