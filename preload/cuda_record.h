/*
 * cuda_record.h - turning one CUDA call into one event.
 *
 * One allocation is recorded once, not once per layer: a thread-local depth
 * counts traced CUDA calls in progress, and only the outermost records (the
 * runtime's cudaMalloc, not the cuMemAlloc_v2 it makes underneath).
 */
#ifndef TRACE_CUDA_RECORD_H
#define TRACE_CUDA_RECORD_H

#include <stdint.h>

/* Returns nonzero for the outermost traced CUDA call on this thread. */
int cuda_call_begin(void);
void cuda_call_end(void);

/* Ask the driver for the current device (call only after a call that
 * succeeded, when a context is current). */
#define CUDA_DEVICE_CURRENT (-2)

struct cuda_call_record {
    uint32_t kind;     /* TF_EV_CUDA_ALLOC or TF_EV_CUDA_FREE */
    uint32_t api;      /* enum tf_api */
    int result;
    int device;        /* or CUDA_DEVICE_CURRENT */
    uint64_t ptr, size, stream;
    uint32_t flags;
};

/* The driver's current device (-1: none, or no driver loaded). */
int cuda_current_device(void);
/* The device of context ctx when it is the calling thread's current one,
 * else -1 (unknown: the driver is not asked to switch contexts). */
int cuda_context_device(void *ctx);
/* Whether device dev's primary context is active: 1, 0, or -1 unknown. */
int cuda_primary_active(int dev);
/* Whether the process is in exit() (its handlers, its destructors). */
int cuda_exit_begun(void);

/* Returns the event's seq (0: nothing recorded). */
uint64_t cuda_record(const struct cuda_call_record *r);

/* Releases (frees, unmaps, address frees) are recorded before the real call,
 * so the log orders them before any allocation that reuses the memory, on
 * any thread; and a free that crashes inside the call is still in the log.
 * The event says result 0; when the call then fails, this records a
 * release_failed event naming it (FORMAT.md). */
void cuda_record_release_failed(uint64_t release_seq, int result);

#endif
