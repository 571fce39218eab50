/*
 * prog_stacks.c - the same allocation site reached through different
 * callers whose frames sit at the same stack addresses, so the recorder's
 * per-thread stack memo (native_stack.c) must tell them apart by what the
 * stack holds, not by where the site was entered.  Built without frame
 * pointers, so no frame-pointer chain can help (noipa: outer_a and outer_b
 * are the same code, which the compiler would otherwise fold into one).
 *
 *   prog_stacks N    N cudaMalloc+cudaFree pairs; pair i allocates 1000 + i
 *                    bytes through outer_a, outer_b or outer_c (an alloca of
 *                    a size that varies), chosen by a hash of i
 *   prog_stacks N thread
 *                    the same on a second thread that may not open a file
 *                    (a seccomp filter kills the process at open or openat:
 *                    a thread's first capture finds its stack's bounds
 *                    without a descriptor), each pair 0, 1 or 2 MiB deeper
 *                    down its stack than the one before it; one pair of 1
 *                    byte on the main thread first.  Exit 77 where no filter
 *                    can be installed.
 *   prog_stacks N threads
 *                    N threads one after another, each making pair i (its
 *                    first capture), then prints "faults F": the page faults
 *                    per thread (getrusage), one pair of 1 byte on the main
 *                    thread first
 */
#include <alloca.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "deny_syscalls.h"

#define KEEP() __asm__ volatile("" ::: "memory")

__attribute__((noinline, noipa)) static void site(size_t size)
{
    void *p;
    if (cudaMalloc(&p, size) != cudaSuccess || cudaFree(p) != cudaSuccess)
        abort();
    KEEP();
}

__attribute__((noinline, noipa)) static void outer_a(size_t size)
{
    site(size);
    KEEP();
}

__attribute__((noinline, noipa)) static void outer_b(size_t size)
{
    site(size);
    KEEP();
}

__attribute__((noinline, noipa)) static void outer_c(size_t size, int pad)
{
    char *buf = alloca(16 * (size_t)pad);
    memset(buf, pad, 16 * (size_t)pad);
    site(size);
    KEEP();
    if (buf[0] == 99)
        puts("");
}

/* Two callers of the outer functions, so the frame above them differs too. */
__attribute__((noinline, noipa)) static void via_x(int i)
{
    unsigned h = (unsigned)i * 2654435761u;
    switch ((h >> 16) % 3) {
    case 0: outer_a(1000 + (size_t)i); break;
    case 1: outer_b(1000 + (size_t)i); break;
    default: outer_c(1000 + (size_t)i, 1 + (int)(h >> 24) % 4); break;
    }
    KEEP();
}

__attribute__((noinline, noipa)) static void via_y(int i)
{
    via_x(i);
    KEEP();
}

static void one_pair(int i)
{
    if ((i / 7) % 2)
        via_y(i);
    else
        via_x(i);
}

/* d frames of 4 KiB each above pair i. */
__attribute__((noinline, noipa)) static void deep(int d, int i)
{
    volatile char pad[4096];
    pad[0] = (char)d;
    pad[sizeof pad - 1] = (char)i;
    if (d > 0)
        deep(d - 1, i);
    else
        one_pair(i);
    KEEP();
}

/* open and openat kill the process, on this thread (and any it starts). */
static int no_open(void)
{
    int nrs[] = { SYS_open, SYS_openat };
    return deny_syscalls(nrs, 2, SECCOMP_RET_KILL_PROCESS);
}

static int pairs;

static void *one_pair_thread(void *arg)
{
    one_pair((int)(intptr_t)arg);
    return NULL;
}

static long minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

static void *pairs_thread(void *unused)
{
    (void)unused;
    if (!no_open())
        return (void *)(intptr_t)77;
    for (int i = 0; i < pairs; i++)
        deep(((i / 50) % 3) * 256, i);
    return NULL;
}

int main(int argc, char **argv)
{
    pairs = argc > 1 ? atoi(argv[1]) : 1000;
    if (argc > 2 && strcmp(argv[2], "threads") == 0) {
        void *p;
        if (cudaMalloc(&p, 1) != cudaSuccess || cudaFree(p) != cudaSuccess)
            abort();
        pthread_t t;
        if (pthread_create(&t, NULL, one_pair_thread, (void *)(intptr_t)0) != 0 || pthread_join(t, NULL) != 0)
            abort();   /* glibc's stack cache holds a stack from here on */
        long before = minor_faults();
        for (int i = 1; i <= pairs; i++)
            if (pthread_create(&t, NULL, one_pair_thread, (void *)(intptr_t)i) != 0 || pthread_join(t, NULL) != 0)
                abort();
        printf("faults %.1f\n", (double)(minor_faults() - before) / pairs);
    } else if (argc > 2 && strcmp(argv[2], "thread") == 0) {
        void *p;
        if (cudaMalloc(&p, 1) != cudaSuccess || cudaFree(p) != cudaSuccess)
            abort();
        pthread_t t;
        void *rc;
        if (pthread_create(&t, NULL, pairs_thread, NULL) != 0 || pthread_join(t, &rc) != 0)
            abort();
        if (rc) {
            fprintf(stderr, "prog_stacks: no seccomp filter here\n");
            return 77;
        }
    } else {
        for (int i = 0; i < pairs; i++)
            one_pair(i);
    }
    printf("done %d\n", pairs);
    return 0;
}
