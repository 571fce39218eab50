/*
 * xalloc.h - allocation that cannot fail quietly.
 *
 * The replayer is an offline tool: running out of memory is fatal and said
 * so, which keeps every caller free of half-handled NULLs.
 */
#ifndef RP_XALLOC_H
#define RP_XALLOC_H

#include <stddef.h>

void *rp_xmalloc(size_t n);
void *rp_xcalloc(size_t n, size_t size);
void *rp_xrealloc(void *p, size_t n);
char *rp_xstrdup(const char *s);

/* Grow *buf (of *cap elements of size each) to hold at least need. */
void rp_grow(void *bufp, size_t *cap, size_t need, size_t size);

#endif
