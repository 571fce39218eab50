/*
 * arena.c - block allocator for the reader's definitions.
 */
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

#define BLOCK_SIZE (64u * 1024)

struct tf_arena_block {
    tf_arena_block *next;
    size_t used, cap;
    alignas(max_align_t) unsigned char data[];
};

void *tf_arena_alloc(tf_arena *a, size_t n)
{
    const size_t align = alignof(max_align_t);
    if (n > SIZE_MAX - align - BLOCK_SIZE)
        return NULL;
    n = (n + align - 1) & ~(align - 1);
    tf_arena_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > BLOCK_SIZE ? n : BLOCK_SIZE;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->used = 0;
        b->cap = cap;
        b->next = a->head;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    return p;
}

char *tf_arena_strndup(tf_arena *a, const void *s, size_t n)
{
    char *p = n < SIZE_MAX ? tf_arena_alloc(a, n + 1) : NULL;
    if (!p)
        return NULL;
    if (n)
        memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void tf_arena_free(tf_arena *a)
{
    while (a->head) {
        tf_arena_block *next = a->head->next;
        free(a->head);
        a->head = next;
    }
}
