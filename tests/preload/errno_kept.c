/*
 * errno_kept.c - recording a large host block leaves errno as the call left
 * it (run under the preload with TRACE_HOST_BUFFERS=1: preload.errno_kept).
 *
 * The recorder's stack walks go through libunwind, whose validation pipe
 * reads report EAGAIN (unwind_pipe.c); a successful malloc, calloc, mmap or
 * munmap of a large block then handed the program errno 11, and a realloc
 * that failed (ENOMEM) as well, since its block's re-recording came after
 * the call.  Each thread's first walks are the step-by-step ones, so several
 * fresh threads each make the calls.  Exits 1 with the calls that changed
 * errno, or with dlerror()'s text when the program's first call has one.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#define THREADS 8
#define ROUNDS 20
#define BIG ((size_t)4 << 20)

enum { MALLOC, CALLOC, REALLOC, REALLOC_FAILED, FREE, MMAP, MUNMAP, CALLS };
static const char *const names[CALLS] = { "malloc", "calloc", "realloc", "failed realloc",
                                          "free", "mmap", "munmap" };
static atomic_int changed[CALLS];

#define KEEP(call, expr)                        \
    do {                                        \
        errno = 4321;                           \
        expr;                                   \
        if (errno != 4321)                      \
            atomic_fetch_add(&changed[call], 1); \
    } while (0)

static void *run(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        void *p, *q;
        KEEP(MALLOC, p = malloc(BIG));
        KEEP(FREE, free(p));
        KEEP(CALLOC, p = calloc(1, BIG));
        KEEP(REALLOC, q = realloc(p, 2 * BIG));
        if (q)
            p = q;
        /* Too large for any allocator: fails with ENOMEM, p stays. */
        errno = 0;
        volatile size_t huge = SIZE_MAX / 4;
        q = realloc(p, huge);
        if (q || errno != ENOMEM)
            atomic_fetch_add(&changed[REALLOC_FAILED], 1);
        if (q)
            p = q;
        KEEP(FREE, free(p));
        KEEP(MMAP, p = mmap(NULL, BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        if (p != MAP_FAILED)
            KEEP(MUNMAP, munmap(p, BIG));
    }
    return NULL;
}

int main(void)
{
    /* Nor dlerror's: the start-up's lookups of names this program lacks
     * (Python's, CUDA's) left "libtrace.so: undefined symbol:
     * PySys_AddAuditHook" for the program's first dlerror(). */
    const char *dl = dlerror();
    if (dl) {
        printf("the first dlerror() says: %s\n", dl);
        return 1;
    }
    pthread_t t[THREADS];
    run(NULL);
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, run, NULL) != 0)
            return 2;
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    int bad = 0;
    for (int c = 0; c < CALLS; c++)
        if (atomic_load(&changed[c])) {
            printf("%s changed errno %d times of %d\n", names[c], atomic_load(&changed[c]),
                   (THREADS + 1) * ROUNDS * (c == FREE ? 2 : 1));
            bad = 1;
        }
    if (!bad)
        printf("errno kept\n");
    return bad;
}
