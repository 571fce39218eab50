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
 *   prog_stacks N sigmask
 *                    N pairs, 20 on each of N / 20 new threads (cold caches),
 *                    each thread under a seccomp filter that traps its
 *                    rt_sigprocmask(SIG_SETMASK) calls: prints "mask_sets
 *                    M", how many the threads made while making their
 *                    pairs (a bare run makes none)
 */
#include <alloca.h>
#include <cuda_runtime_api.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

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

/* sigmask: rt_sigprocmask(SIG_SETMASK, ...) on a counting thread traps
 * (seccomp) into this handler, which counts it and skips it. */
static __thread int counting;
static _Atomic long mask_sets;

static void on_sigsys(int sig, siginfo_t *si, void *context)
{
    (void)sig;
    (void)si;
#if defined(__x86_64__)
    ucontext_t *uc = context;
    uc->uc_mcontext.gregs[REG_RAX] = 0;
#else
    (void)context;
#endif
    if (counting)
        mask_sets++;
}

static int trap_mask_sets(void)
{
#if defined(__x86_64__)
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_rt_sigprocmask, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SIG_SETMASK, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { .len = sizeof code / sizeof code[0], .filter = code };
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
#else
    return 0;
#endif
}

/* A new thread (cold caches) that counts the signal-mask changes made on
 * it while it makes 20 pairs. */
static void *mask_counting_thread(void *arg)
{
    int first = (int)(intptr_t)arg;
    if (!trap_mask_sets())
        return (void *)(intptr_t)77;
    counting = 1;
    for (int i = first; i < first + 20; i++)
        deep(i % 7, i);
    counting = 0;
    return NULL;
}

static int mask_sets_while_walking(void)
{
    struct sigaction sa = { .sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSYS, &sa, NULL);
    void *p;
    if (cudaMalloc(&p, 1) != cudaSuccess || cudaFree(p) != cudaSuccess)
        abort();
    for (int k = 0; k < pairs / 20; k++) {
        pthread_t t;
        void *rc;
        if (pthread_create(&t, NULL, mask_counting_thread, (void *)(intptr_t)(k * 20)) != 0 ||
            pthread_join(t, &rc) != 0)
            abort();
        if (rc) {
            fprintf(stderr, "prog_stacks: no seccomp filter here\n");
            return 77;
        }
    }
    printf("mask_sets %ld\n", (long)mask_sets);
    return 0;
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
    if (argc > 2 && strcmp(argv[2], "sigmask") == 0)
        return mask_sets_while_walking();
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
