/*
 * dl_load_malloc - a dlopen that loads an object, and the dlclose that
 * unloads it, make no allocation of the tracer's from the program's
 * malloc: the recorder's own memory is mapped by itself.  The program
 * defines malloc (counting, then forwarding to glibc's) and prints how many
 * calls a dlopen of an object not loaded yet (libm) and its dlclose made:
 * the same traced as bare.  glibc's own count settles after a round or two
 * (its table of mappings grows by steps, which depend on how many objects
 * are loaded, libtrace.so's among them), so the last of eight rounds is
 * printed.  dl_same_set does this for calls that load nothing.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static unsigned long calls;

void *malloc(size_t n) { calls++; return __libc_malloc(n); }
void free(void *p) { calls++; __libc_free(p); }
void *calloc(size_t n, size_t m) { calls++; return __libc_calloc(n, m); }
void *realloc(void *p, size_t n) { calls++; return __libc_realloc(p, n); }

/* A recorded event (TRACE_HOST_BUFFERS=1): recording is on from the first. */
static void host_block(void)
{
    void *m = mmap(NULL, 2u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED)
        munmap(m, 2u << 20);
}

int main(void)
{
    host_block();
    /* glibc's first dlopen sets up what later ones reuse: not counted. */
    void *c = dlopen("libc.so.6", RTLD_NOW);
    if (!c || dlclose(c))
        return 1;
    unsigned long opened = 0, closed = 0;
    for (int round = 0; round < 8; round++) {
        unsigned long before = calls;
        void *m = dlopen("libm.so.6", RTLD_NOW);
        opened = calls - before;
        if (!m) {
            fprintf(stderr, "dlopen libm.so.6: %s\n", dlerror());
            return 1;
        }
        host_block();
        unsigned long between = calls;
        if (dlclose(m))
            return 1;
        closed = calls - between;
    }
    printf("dlopen %lu, dlclose %lu\n", opened, closed);
    return 0;
}
