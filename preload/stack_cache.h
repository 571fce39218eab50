/*
 * stack_cache.h - a per-thread memo of recently interned native stacks.
 *
 * A call site in a loop records the same stack again and again; finding its
 * id here (one memcmp, outside the recorder's lock) saves hashing it under
 * the lock every time.  Ids belong to one writer: entries carry the writer
 * generation they were interned in.
 */
#ifndef TRACE_STACK_CACHE_H
#define TRACE_STACK_CACHE_H

#include <stdint.h>

/* The stack's id, or 0 when not remembered. */
uint32_t stack_cache_find(const uint64_t *ips, int n, uint32_t generation);
void stack_cache_store(const uint64_t *ips, int n, uint32_t generation, uint32_t id);

#endif
