/*
 * prog_small_stack.c - hooks on threads with little stack left.
 *
 *   prog_small_stack run STACK      a thread of STACK bytes: malloc(2 MiB),
 *                                   realloc, mmap and cudaMalloc/cudaFree, 100 times
 *   prog_small_stack deep LEFT      a thread of 256 KiB that used all of its stack
 *                                   but LEFT bytes, then the same
 *   prog_small_stack room STACK     how much of a thread of STACK bytes is left
 *                                   below its start routine's frame: "room BYTES"
 *   prog_small_stack fill STACK N   a thread of STACK bytes that uses N bytes
 *                                   below that frame, and no traced call
 *   prog_small_stack paint STACK    the most stack each kind of call took on a
 *                                   thread of STACK bytes (0: the default), one
 *                                   line each: "KIND BYTES"
 *
 * Painting: the stack below the caller's frame is filled with a pattern,
 * the call made, and the pattern looked for from below: what is gone the
 * call wrote.  The first event of a thread is a kind of its own (the
 * recorder's first-time work), and each other kind is made 2,000 times,
 * so some of its events seal a chunk or hand it over.
 */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BIG (2u << 20)
#define PATTERN 0xA5

static size_t paint_bytes;

static __attribute__((noinline)) uintptr_t paint(void)
{
    unsigned char *buf = __builtin_alloca(paint_bytes);
    memset(buf, PATTERN, paint_bytes);
    __asm__ volatile("" : : "r"(buf) : "memory");   /* the stores stay */
    return (uintptr_t)buf;
}

static __attribute__((noinline)) size_t used_since(uintptr_t lo)
{
    volatile char here;
    const unsigned char *p = (const unsigned char *)lo;
    size_t i = 0;
    while (i < paint_bytes && p[i] == PATTERN)
        i++;
    return (uintptr_t)&here - (lo + i);
}

static void *sink;

static __attribute__((noinline)) void op_malloc(void)
{
    void *p = malloc(BIG);
    sink = p;
    free(p);
}

static __attribute__((noinline)) void op_realloc(void)
{
    void *p = malloc(BIG);
    p = realloc(p, 2 * BIG);
    sink = p;
    free(p);
}

static __attribute__((noinline)) void op_mmap(void)
{
    void *p = mmap(NULL, BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED)
        munmap(p, BIG);
}

static __attribute__((noinline)) void op_cuda_malloc(void)
{
    void *d = NULL;
    if (cudaMalloc(&d, BIG) == cudaSuccess)
        sink = d;
}

static __attribute__((noinline)) void op_cuda_free(void)
{
    cudaFree(sink);
}

static void all_once(void)
{
    op_malloc();
    op_realloc();
    op_mmap();
    op_cuda_malloc();
    op_cuda_free();
}

static void *run_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < 100; i++)
        all_once();
    return NULL;
}

/* All of this thread's stack but `left` bytes, then the calls. */
static __attribute__((noinline)) void use_up(size_t left)
{
    pthread_attr_t a;
    void *lo;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &a) != 0 || pthread_attr_getstack(&a, &lo, &size) != 0)
        abort();
    pthread_attr_destroy(&a);
    volatile char here;
    size_t take = (uintptr_t)&here - (uintptr_t)lo - left;
    volatile char *block = __builtin_alloca(take);
    block[0] = 1;   /* the lowest byte taken: the stack is used down to it */
    run_thread(NULL);
    sink = (void *)block;
}

static void *deep_thread(void *arg)
{
    use_up((size_t)(uintptr_t)arg);
    return NULL;
}

/* What glibc leaves of a thread's stack once it has carved out the
 * descriptor and every initially loaded object's static TLS: measured from
 * the same frame that fill_thread uses it from. */
static void *fill_thread(void *arg)
{
    size_t take = (size_t)(uintptr_t)arg;
    volatile char here;
    if (!take) {
        pthread_attr_t a;
        void *lo;
        size_t size;
        if (pthread_getattr_np(pthread_self(), &a) != 0 || pthread_attr_getstack(&a, &lo, &size) != 0)
            abort();
        pthread_attr_destroy(&a);
        printf("room %zu\n", (size_t)((uintptr_t)&here - (uintptr_t)lo));
        return NULL;
    }
    volatile char *block = __builtin_alloca(take);
    block[0] = 1;   /* the lowest byte taken: faults where the stack ends above it */
    sink = (void *)block;
    return NULL;
}

static void report(const char *kind, size_t bytes)
{
    printf("%s %zu\n", kind, bytes);
}

#define MEASURE(kind, times, call)                      \
    do {                                                \
        size_t most = 0;                                \
        for (int i_ = 0; i_ < (times); i_++) {          \
            uintptr_t lo_ = paint();                    \
            call;                                       \
            size_t u_ = used_since(lo_);                \
            if (u_ > most)                              \
                most = u_;                              \
        }                                               \
        report(kind, most);                             \
    } while (0)

static void *paint_thread(void *arg)
{
    (void)arg;
    MEASURE("first", 1, op_malloc());
    MEASURE("malloc", 2000, op_malloc());
    MEASURE("realloc", 2000, op_realloc());
    MEASURE("mmap", 2000, op_mmap());
    MEASURE("cudaMalloc", 2000, op_cuda_malloc(); op_cuda_free());
    return NULL;
}

static int in_thread(void *(*fn)(void *), size_t stack, void *arg)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    if (stack && pthread_attr_setstacksize(&a, stack) != 0) {
        fprintf(stderr, "stack size %zu refused\n", stack);
        return 2;
    }
    pthread_t t;
    if (pthread_create(&t, &a, fn, arg) != 0) {
        fprintf(stderr, "pthread_create failed\n");
        return 2;
    }
    pthread_join(t, NULL);
    pthread_attr_destroy(&a);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    size_t n = strtoul(argv[2], NULL, 0);
    if (strcmp(argv[1], "run") == 0)
        return in_thread(run_thread, n, NULL);
    if (strcmp(argv[1], "deep") == 0)
        return in_thread(deep_thread, 256 * 1024, (void *)(uintptr_t)n);
    if (strcmp(argv[1], "room") == 0)
        return in_thread(fill_thread, n, NULL);
    if (strcmp(argv[1], "fill") == 0 && argc > 3)
        return in_thread(fill_thread, n, (void *)(uintptr_t)strtoul(argv[3], NULL, 0));
    if (strcmp(argv[1], "paint") == 0) {
        /* On a small stack, as much as it has to spare: what is left after
         * the thread's own frames, glibc's descriptor and TLS. */
        paint_bytes = n ? n / 2 : 64 * 1024;
        return in_thread(paint_thread, n, NULL);
    }
    return 2;
}
