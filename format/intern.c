/*
 * intern.c - open-addressing tables from byte strings to ids.
 */
#include <stdlib.h>
#include <string.h>

#include "intern.h"
#include "pages.h"

/* The recorder hashes a 32-frame stack for every event, so the hash must not
 * be one long dependency chain: each 16-byte block is folded by its own
 * 64x64->128 multiply (keyed by its position, so reordered frames differ)
 * and the results are summed.  Quality only needs to suit linear probing. */
static uint64_t fold(uint64_t a, uint64_t b)
{
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

uint64_t tf_intern_hash(const void *key, size_t len)
{
    const uint64_t k1 = 0xa0761d6478bd642full, k2 = 0xe7037ed1a0b428dbull;
    const uint8_t *p = key;
    uint64_t h = fold(len ^ k1, k2), pos = 0;
    for (; len >= 16; p += 16, len -= 16, pos += k1) {
        uint64_t w[2];
        memcpy(w, p, 16);
        h += fold(w[0] ^ k1 ^ pos, w[1] ^ k2);
    }
    if (len) {
        uint64_t w[2] = { 0, 0 };
        memcpy(w, p, len);
        h += fold(w[0] ^ k1 ^ pos, w[1] ^ k2);
    }
    return fold(h ^ k2, h ^ k1);
}

static int slot_matches(const tf_intern *t, const tf_intern_slot *s, const void *key,
                        size_t len, uint64_t hash)
{
    /* An empty key may be all there is, with no key bytes mapped yet. */
    return s->hash == hash && s->key_len == len && (len == 0 || memcmp(t->keys + s->key_off, key, len) == 0);
}

uint32_t tf_intern_find(const tf_intern *t, const void *key, size_t len, uint64_t hash)
{
    if (!t->slots)
        return 0;
    for (size_t i = hash & t->mask;; i = (i + 1) & t->mask) {
        const tf_intern_slot *s = &t->slots[i];
        if (s->id == 0)
            return 0;
        if (slot_matches(t, s, key, len, hash))
            return s->id;
    }
}

static void place(tf_intern_slot *slots, size_t mask, const tf_intern_slot *s)
{
    size_t i = s->hash & mask;
    while (slots[i].id != 0)
        i = (i + 1) & mask;
    slots[i] = *s;
}

static int grow_slots(tf_intern *t)
{
    size_t size = t->slots ? (t->mask + 1) * 2 : 64;
    tf_intern_slot *slots = tf_pages_resize(NULL, 0, size * sizeof *slots);  /* zeroed */
    if (!slots)
        return -1;
    if (t->slots) {
        /* A quarter full at once with the old keys, spread over every page. */
        tf_pages_prefault(slots, size * sizeof *slots);
        for (size_t i = 0; i <= t->mask; i++)
            if (t->slots[i].id != 0)
                place(slots, size - 1, &t->slots[i]);
        tf_pages_free(t->slots, (t->mask + 1) * sizeof *t->slots);
    }
    t->slots = slots;
    t->mask = size - 1;
    return 0;
}

uint32_t tf_intern_add(tf_intern *t, const void *key, size_t len, uint64_t hash)
{
    if (len > UINT32_MAX || tf_intern_ids(t) >= UINT32_MAX - 1)
        return 0;
    if ((!t->slots || (size_t)t->count + 1 > (t->mask + 1) / 2) && grow_slots(t) < 0)
        return 0;
    if (tf_pages_reserve(&t->keys, &t->keys_cap, t->keys_len, len, 4096) < 0)
        return 0;
    if (len)
        memcpy(t->keys + t->keys_len, key, len);
    tf_intern_slot s = { hash, t->keys_len, (uint32_t)len, tf_intern_ids(t) + 1 };
    t->keys_len += len;
    place(t->slots, t->mask, &s);
    t->count++;
    return s.id;
}

void tf_intern_forget(tf_intern *t)
{
    uint32_t ids = tf_intern_ids(t);
    tf_intern_free(t);
    t->base = ids;
}

void tf_intern_free(tf_intern *t)
{
    if (t->slots)
        tf_pages_free(t->slots, (t->mask + 1) * sizeof *t->slots);
    tf_pages_free(t->keys, t->keys_cap);
    memset(t, 0, sizeof *t);
}
