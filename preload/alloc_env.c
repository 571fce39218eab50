/*
 * alloc_env.c - see alloc_env.h.  Called from the CUDA hooks, on whatever
 * thread allocates first: getenv only, no lock of ours, no allocation.
 */
#include "alloc_env.h"
#include "recorder.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* The settings a pool model follows or says it does not (docs/models.md). */
static const char *const names[] = {
    "PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "CUPY_GPU_MEMORY_LIMIT", "CUPY_CUDA_PER_THREAD_DEFAULT_STREAM",
    "TF_FORCE_GPU_ALLOW_GROWTH", "TF_ENABLE_GPU_GARBAGE_COLLECTION", "TF_GPU_ALLOCATOR",
    "XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_ALLOCATOR",
};

void alloc_env_note(void)
{
    static atomic_int noted;
    if (atomic_load_explicit(&noted, memory_order_relaxed) || atomic_exchange(&noted, 1))
        return;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *value = getenv(names[i]);
        if (!value)
            continue;
        char key[64];
        snprintf(key, sizeof key, "env:%s", names[i]);
        rec_info(key, value);
    }
}
