/*
 * pool_api_exports.c - the annotation API as plain functions, for callers
 * that cannot use the header (Python: ctypes.CDLL(None).trace_pool_alloc).
 */
#include "pool_api.h"

int trace_pool_register(const char *name)
{
    return pool_api_register(name);
}

uint64_t trace_pool_op_begin(int pool, int op, uint64_t arg)
{
    return pool_api_op_begin(pool, op, arg);
}

void trace_pool_op_end(int pool, uint64_t op)
{
    pool_api_op_end(pool, op);
}

void trace_pool_alloc(int pool, const void *ptr, size_t requested, size_t granted, uint64_t stream)
{
    pool_api_alloc(pool, ptr, requested, granted, stream);
}

void trace_pool_free(int pool, const void *ptr, size_t size)
{
    pool_api_free(pool, ptr, size);
}

void trace_pool_segment(int pool, int grow, const void *ptr, size_t size)
{
    pool_api_segment(pool, grow, ptr, size);
}

void trace_mark(const char *text)
{
    pool_api_mark(text);
}
