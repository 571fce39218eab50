/*
 * own_malloc - a program that defines malloc itself (as programs linked with
 * a static allocator do): the preload's malloc is never called, and the log
 * must say that those blocks were not watched rather than show none.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

void *malloc(size_t n) { return __libc_malloc(n); }
void free(void *p) { __libc_free(p); }
void *calloc(size_t n, size_t m) { return __libc_calloc(n, m); }
void *realloc(void *p, size_t n) { return __libc_realloc(p, n); }

int main(void)
{
    char *p = malloc(4u << 20);
    memset(p, 1, 4u << 20);
    printf("%d\n", p[100]);
    free(p);
    /* mmap is still ours: this block gives the log an event, so it exists. */
    void *m = mmap(NULL, 2u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(m, 2u << 20);
    return 0;
}
