/*
 * pool_api.h - the pool-annotation API's implementation, shared by the
 * trace_api_v1() table and the plain exported functions ctypes users call.
 * (trace_api.h itself cannot be included next to those: it defines static
 * inline functions of the same names for its users.)
 */
#ifndef TRACE_POOL_API_H
#define TRACE_POOL_API_H

#include <stddef.h>
#include <stdint.h>

int pool_api_register(const char *name);
uint64_t pool_api_op_begin(int pool, int op, uint64_t arg);
void pool_api_op_end(int pool, uint64_t op);
void pool_api_alloc(int pool, const void *ptr, size_t requested, size_t granted, uint64_t stream);
void pool_api_free(int pool, const void *ptr, size_t size);
void pool_api_segment(int pool, int grow, const void *ptr, size_t size);
void pool_api_mark(const char *text);

/* In a forked child: name the pools again in the child's new log. */
void pool_api_fork_child(void);

#endif
