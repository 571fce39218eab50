/*
 * arena.h - bump allocation in blocks that never move.
 *
 * The reader hands out pointers to strings, stacks and modules that must stay
 * valid for the reader's life while the tables that index them keep growing;
 * an arena gives stable addresses and frees everything at once.
 */
#ifndef TF_ARENA_H
#define TF_ARENA_H

#include <stddef.h>

typedef struct tf_arena_block tf_arena_block;
typedef struct tf_arena { tf_arena_block *head; } tf_arena;

/* n bytes aligned for any type, or NULL when out of memory. */
void *tf_arena_alloc(tf_arena *a, size_t n);
/* A NUL-terminated copy of n bytes. */
char *tf_arena_strndup(tf_arena *a, const void *s, size_t n);
void tf_arena_free(tf_arena *a);

#endif
