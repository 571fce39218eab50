/*
 * cuda_hooks.h - what happens inside each CUDA wrapper.  real is the
 * function the caller would have reached (NULL if it could not be found).
 */
#ifndef TRACE_CUDA_HOOKS_H
#define TRACE_CUDA_HOOKS_H

#include "cuda_abi.h"

#define CUDA_HOOK_DECLARE(name, hook, params, args) \
    int cuda_hook_##hook(CUDA_PREPEND(void *real, params));
CUDA_ENTRIES(CUDA_HOOK_DECLARE)
#undef CUDA_HOOK_DECLARE

#endif
