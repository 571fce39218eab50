/*
 * prog_pool.c - a toy pool annotated with trace_api.h.  The same binary
 * runs with and without the preload; its output must not differ.
 */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>

#include "trace_api.h"

int main(void)
{
    int pool = trace_pool_register("toy-pool");
    uint64_t op = trace_pool_op_begin(pool, TRACE_POOL_OP_ALLOC, 1000);
    void *segment = NULL;
    cudaMalloc(&segment, 1 << 20);               /* nested in the pool op */
    trace_pool_segment(pool, TRACE_SEGMENT_GROW, segment, 1 << 20);
    trace_pool_alloc(pool, segment, 1000, 1024, 7);
    trace_pool_op_end(pool, op);
    trace_mark("between");
    uint64_t op2 = trace_pool_op_begin(pool, TRACE_POOL_OP_FREE, (uintptr_t)segment);
    trace_pool_free(pool, segment, 1024);
    trace_pool_op_end(pool, op2);
    trace_pool_segment(pool, TRACE_SEGMENT_RELEASE, segment, 1 << 20);
    cudaFree(segment);
    printf("pool=%d traced=%d\n", pool > 0, op > 0);
    return 0;
}
