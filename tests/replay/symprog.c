/*
 * symprog.c - a toy pool that frees a block twice, from a function with a
 * name: trace-replay must show that name, file and line in the stack of the
 * violation, from the binary or, once it moved, from --debug-dir.
 */
#include <stdint.h>
#include <stdio.h>

#include "trace_api.h"

static int pool;

__attribute__((noinline)) static void give_back(uint64_t ptr)
{
    uint64_t op = trace_pool_op_begin(pool, TRACE_POOL_OP_FREE, ptr);
    trace_pool_free(pool, (const void *)(uintptr_t)ptr, 4096);
    trace_pool_op_end(pool, op);
}

__attribute__((noinline)) static void free_twice(uint64_t ptr)
{
    give_back(ptr);
    give_back(ptr);
}

int main(void)
{
    pool = trace_pool_register("toy");
    uint64_t op = trace_pool_op_begin(pool, TRACE_POOL_OP_ALLOC, 4000);
    trace_pool_segment(pool, TRACE_SEGMENT_GROW, (const void *)0x10000000, 1 << 20);
    trace_pool_alloc(pool, (const void *)0x10000000, 4000, 4096, 0);
    trace_pool_op_end(pool, op);
    free_twice(0x10000000);
    puts("done");
    return 0;
}
