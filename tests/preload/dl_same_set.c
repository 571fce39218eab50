/*
 * dl_same_set - dlopen and dlclose that leave the set of loaded objects as
 * it was (an object already loaded, the program itself, a reference
 * dropped) make no allocation of the tracer's from the program's malloc:
 * psutil.heap_info (mallinfo2 through a dlopen'd libc) and its own tests
 * saw the tracer's snapshot of the module table there.  The program
 * defines malloc (counting, then forwarding to glibc's) and prints how many
 * calls those dlopen/dlclose made: the same traced as bare.  Then it opens
 * and closes an object not loaded yet (libm), with a host block recorded
 * while it is loaded, so the log must still hold its load and unload.
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

static int open_close(const char *name)
{
    void *h = dlopen(name, RTLD_NOW);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", name ? name : "NULL", dlerror());
        return -1;
    }
    return dlclose(h);
}

int main(void)
{
    host_block();
    /* glibc's first dlopen sets up what later ones reuse: not counted. */
    if (open_close("libc.so.6") || open_close(NULL))
        return 1;
    unsigned long before = calls;
    for (int i = 0; i < 10; i++)
        if (open_close("libc.so.6") || open_close(NULL))
            return 1;
    unsigned long made = calls - before;

    void *m = dlopen("libm.so.6", RTLD_NOW);
    if (!m) {
        fprintf(stderr, "dlopen libm.so.6: %s\n", dlerror());
        return 1;
    }
    host_block();
    if (dlclose(m))
        return 1;
    host_block();
    printf("%lu\n", made);
    return 0;
}
