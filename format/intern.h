/*
 * intern.h - the writer's deduplication tables.
 *
 * Maps byte strings (a string's bytes, a stack's instruction pointers, a code
 * object's fields) to the small ids the log uses instead of repeating them.
 * Open addressing with linear probing over a power-of-two table that doubles
 * at 50% load; keys are copied into one growing byte array so slots stay small.
 * Ids are handed out in insertion order starting at 1, and never twice, even
 * after the table forgot its keys (a new segment of a log: writer.c).
 */
#ifndef TF_INTERN_H
#define TF_INTERN_H

#include <stddef.h>
#include <stdint.h>

typedef struct tf_intern_slot {
    uint64_t hash;
    size_t key_off;
    uint32_t key_len;
    uint32_t id;        /* 0: empty slot */
} tf_intern_slot;

typedef struct tf_intern {
    tf_intern_slot *slots;
    size_t mask;        /* table size - 1; 0 before the first insert */
    uint32_t count;     /* keys in the table */
    uint32_t base;      /* ids handed out before the last tf_intern_forget */
    uint8_t *keys;
    size_t keys_len, keys_cap;
} tf_intern;

uint64_t tf_intern_hash(const void *key, size_t len);
/* The id of key, or 0 when it is not in the table. */
uint32_t tf_intern_find(const tf_intern *t, const void *key, size_t len, uint64_t hash);
/* Insert a key known to be absent; returns its new id, or 0 when out of memory. */
uint32_t tf_intern_add(tf_intern *t, const void *key, size_t len, uint64_t hash);
/* Forget every key (and free their memory); ids go on from where they
 * were, so an id is never handed out twice. */
void tf_intern_forget(tf_intern *t);
/* Ids handed out so far. */
static inline uint32_t tf_intern_ids(const tf_intern *t) { return t->base + t->count; }
void tf_intern_free(tf_intern *t);

#endif
