/* xalloc.c - allocation that exits with a message instead of returning NULL. */
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *check(void *p, size_t n)
{
    if (!p && n) {
        fprintf(stderr, "trace-replay: out of memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

void *rp_xmalloc(size_t n) { return check(malloc(n ? n : 1), n); }
void *rp_xcalloc(size_t n, size_t size) { return check(calloc(n ? n : 1, size ? size : 1), n * size); }
void *rp_xrealloc(void *p, size_t n) { return check(realloc(p, n ? n : 1), n); }

char *rp_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(rp_xmalloc(n), s, n);
}

void rp_grow(void *bufp, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return;
    size_t ncap = *cap ? *cap : 16;
    while (ncap < need)
        ncap *= 2;
    void **buf = bufp;
    *buf = rp_xrealloc(*buf, ncap * size);
    *cap = ncap;
}
