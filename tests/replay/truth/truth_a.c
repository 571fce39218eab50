/* truth_a.c - loaded, used and unloaded first by truthprog.c: its frames
 * must keep its names after truth_b.c is loaded at the same addresses. */
#include <stdlib.h>
#include <string.h>

__attribute__((noinline, noclone)) void *truth_alloc_a(size_t n)
{
    char *p = malloc(n); /* TRUTH_A_CALL */
    memset(p, 1, 64);    /* the line after the call: not the one to name */
    return p;
}

/* Inlined: the frame's line is this function's, so it is named with it. */
static inline __attribute__((always_inline)) char *truth_inline_helper(size_t n)
{
    char *p = malloc(n); /* TRUTH_INLINE_CALL */
    p[5] = 6;
    return p;
}

__attribute__((noinline, noclone)) void *truth_alloc_a_inl(size_t n)
{
    char *p = truth_inline_helper(n);
    memset(p, 7, 32);
    return p;
}
