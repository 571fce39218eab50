/*
 * cuda_symbols.h - which function a CUDA wrapper calls, and which wrapper a
 * caller gets.
 *
 * Our exported symbols (cudaMalloc, cuMemAlloc_v2, ...) serve every object
 * that binds to them; each call goes to the definition the caller would have
 * reached without us, found from the caller's own object (so several
 * runtimes in one process, and libraries opened RTLD_LOCAL, both work).
 * Pointers handed out by dlsym on a handle, cuGetProcAddress or
 * cudaGetDriverEntryPoint are wrapped in a "slot": a wrapper bound to that
 * one real function pointer.
 */
#ifndef TRACE_CUDA_SYMBOLS_H
#define TRACE_CUDA_SYMBOLS_H

#include "cuda_abi.h"

/* Slots per entry point: distinct real functions one process can hand out
 * for one name (runtimes, per-thread-stream variants). */
#define CUDA_SLOTS 8

/* dlsym(handle, name) returned real: our wrapper when name is an entry we
 * trace, else real. */
void *cuda_symbol_wrap(const char *name, void *real);

/* cuGetProcAddress / cudaGetDriverEntryPoint returned real for a driver
 * symbol's base name ("cuMemAlloc") at this CUDA version (e.g. 12080). */
void *cuda_driver_symbol_wrap(const char *name, void *real, int version);

/* For our exported symbol `entry` called from return address ret: the real
 * function, or NULL. */
void *cuda_real_for_caller(enum cuda_entry entry, const void *ret);

/* Filled by cuda_hooks.c: each entry's name, its slot wrappers, and the real
 * function each slot is bound to (NULL: free). */
extern const char *const cuda_entry_name[CUDA_ENTRY_COUNT];
extern void *const cuda_slot_wrapper[CUDA_ENTRY_COUNT][CUDA_SLOTS];
extern void *_Atomic cuda_slot_real[CUDA_ENTRY_COUNT][CUDA_SLOTS];

#endif
