/*
 * evtext.h - event sequences written as text, for tests.
 *
 * One event per line; seq, parent and op_end.begin are filled in from the
 * per-thread nesting, so a scenario reads like the story it tells:
 *
 *     pool 1 cupy                     a pool's name (definitions, for mklog)
 *     op alloc 1 1536                 pool_op_begin (opens): pool, size
 *     cuda_alloc 0x100000 1536 [err]  cudaMalloc (result err, default 0)
 *     cuda_free 0x100000
 *     cuda_alloc_dev 1 0x100000 1536  cudaMalloc on device 1 (others: device 0)
 *     pinned_alloc 0x5000 4096        cudaMallocHost     pinned_free 0x5000
 *     reset 0                         cudaDeviceReset of device 0 (-1: unknown)
 *     vmm_create 0x1001 2M            cuMemCreate: handle, size
 *     vmm_release 0x1001              cuMemRelease
 *     va_reserve 0x400000 4M          cuMemAddressReserve   va_free 0x400000
 *     alloc 1 0x100000 1536 [granted [stream]]   pool_alloc
 *     end                             pool_op_end of the innermost open op
 *     op free 1 0x100000              pool_op_begin (opens): pool, pointer
 *     free 1 0x100000 [size]          pool_free
 *     gc [generation]                 gc_start (opens)   gcend: gc_stop
 *     segment grow|release 1 0x100000 1048576
 *     host_alloc 0x5000 1048576 [api] host_free 0x5000 [api]  (api: a host api
 *                                     name, FORMAT.md section 7: mmap, map_rest...)
 *     stack 0x401000 0x401100 ...     native stack of the next event (in
 *                                     memory its id is 1 + the event's index)
 *     endlog                          the END record
 *
 * A line may start with "tN " to run on thread N (default 1).  Numbers take
 * 0x and k/M/G suffixes (powers of 1024).  '#' starts a comment.
 */
#ifndef EVTEXT_H
#define EVTEXT_H

#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"

typedef struct evtext {
    tf_event *ev;
    size_t n;
    struct { uint32_t id; char name[64]; } pools[16];
    int npools;
    /* stacks[i]: the native stack given for event i (n ips, 0 if none) */
    struct { uint64_t ips[16]; uint32_t n; } *stacks;
    int has_end;
} evtext;

/* 0, or -1 with a message naming the line in err. */
int evtext_parse(const char *text, evtext *out, char *err, size_t errlen);
int evtext_load(const char *path, evtext *out, char *err, size_t errlen);
void evtext_free(evtext *t);

#endif
