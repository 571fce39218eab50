/*
 * cuda_procaddr.c - the plumbing that hands out driver function pointers.
 *
 * A statically linked runtime (nvcc's default, CuPy 13+) reaches the driver
 * only through cuGetProcAddress; PyTorch fetches cuMemCreate and friends
 * through cudaGetDriverEntryPoint.  Whatever they ask for, they get what the
 * driver gave, except that entry points we trace come back wrapped (and
 * cuGetProcAddress itself comes back as ours).  cuGetExportTable and every
 * other name pass through untouched.
 */
#include "cuda_hooks.h"
#include "cuda_symbols.h"

/* cudaGetDriverEntryPoint has no version argument: it answers for the
 * runtime's own version, 12.0 or later for every runtime that has it in a
 * form with the status argument. */
#define RUNTIME_DEFAULT_VERSION 12000

static void wrap_answer(int r, const char *sym, void **pfn, int version)
{
    if (r == 0 && sym && pfn && *pfn)
        *pfn = cuda_driver_symbol_wrap(sym, *pfn, version);
}

int cuda_hook_cuGetProcAddress(void *real, const char *sym, void **pfn, int version,
                               uint64_t flags)
{
    int r = real ? ((int (*)(const char *, void **, int, uint64_t))real)(sym, pfn, version, flags)
                 : CUDA_NO_REAL;
    wrap_answer(r, sym, pfn, version);
    return r;
}

int cuda_hook_cuGetProcAddress_v2(void *real, const char *sym, void **pfn, int version,
                                  uint64_t flags, int *status)
{
    int r = real ? ((int (*)(const char *, void **, int, uint64_t, int *))real)(sym, pfn, version,
                                                                             flags, status)
                 : CUDA_NO_REAL;
    wrap_answer(r, sym, pfn, version);
    return r;
}

int cuda_hook_cudaGetDriverEntryPoint(void *real, const char *sym, void **pfn,
                                      unsigned long long flags, int *status)
{
    int r = real ? ((int (*)(const char *, void **, unsigned long long, int *))real)(sym, pfn,
                                                                                  flags, status)
                 : CUDA_NO_REAL;
    wrap_answer(r, sym, pfn, RUNTIME_DEFAULT_VERSION);
    return r;
}

int cuda_hook_cudaGetDriverEntryPointByVersion(void *real, const char *sym, void **pfn,
                                               unsigned version, unsigned long long flags,
                                               int *status)
{
    int r = real ? ((int (*)(const char *, void **, unsigned, unsigned long long, int *))real)(
                       sym, pfn, version, flags, status)
                 : CUDA_NO_REAL;
    wrap_answer(r, sym, pfn, (int)version);
    return r;
}
