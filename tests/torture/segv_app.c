/*
 * segv_app.c - an app with its own SIGSEGV handler, which recovers from a
 * real fault with siglongjmp (as JITs and guard-page schemes do).
 *
 *   segv_app recover   fault once, recover, print, exit 0
 *   segv_app crash     fault once and recover, then restore the default
 *                      action, record marks "final" and fault for real
 *   segv_app plain     no handler of its own: mark "final", fault
 *
 * The handler is installed in main (after the tracer's start), or, in the
 * segv_app_early build (SEGV_EARLY), by a constructor of libsegv_early.so, a
 * library this program needs, which the loader starts before the preload.
 */
#include <cuda_runtime_api.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "segv_early.h"
#include "trace_api.h"

/* A store to a page with no access: a real SIGSEGV, and not the null
 * store a sanitizer would report before it happens. */
static void fault(void)
{
    volatile int *forbidden = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    *forbidden = 1;
}

static void cuda_pair(void)
{
    void *p;
    if (cudaMalloc(&p, 4096) == cudaSuccess)
        cudaFree(p);
}

static void recover_once(void)
{
#ifndef SEGV_EARLY
    segv_install_handler();
#endif
    trace_mark("before-fault");
    if (sigsetjmp(segv_recovery, 1) == 0)
        fault();
    printf("handled %d\n", (int)segv_handled);
    fflush(stdout);
    trace_mark("after-recovery");
    cuda_pair();
}

static void crash(void)
{
    struct sigaction dfl = { .sa_handler = SIG_DFL };
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGSEGV, &dfl, NULL);
    cuda_pair();
    trace_mark("final");
    fault();
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
#ifdef SEGV_EARLY
    printf("installed first %d\n", segv_installed_first);
#endif
    if (strcmp(argv[1], "plain") == 0)
        crash();
    recover_once();
    if (strcmp(argv[1], "crash") == 0)
        crash();
    printf("done\n");
    return 0;
}
