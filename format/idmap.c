/*
 * idmap.c - open addressing, linear probing, doubling at 50% load.
 */
#include <stdlib.h>
#include <string.h>

#include "idmap.h"

static uint32_t slot_of(uint32_t key, uint32_t mask)
{
    return (key * 0x9e3779b1u) & mask;
}

static uint32_t *find_slot(const tf_idmap *m, uint32_t key)
{
    for (uint32_t i = slot_of(key, m->mask);; i = (i + 1) & m->mask)
        if (m->vals[i] == 0 || m->keys[i] == key)
            return &m->vals[i];
}

static int grow(tf_idmap *m)
{
    uint32_t size = m->vals ? (m->mask + 1) * 2 : 64;
    if (size == 0)
        return -1;
    tf_idmap bigger = { calloc(size, sizeof(uint32_t)), calloc(size, sizeof(uint32_t)),
                        size - 1, m->count };
    if (!bigger.keys || !bigger.vals) {
        free(bigger.keys);
        free(bigger.vals);
        return -1;
    }
    for (uint32_t i = 0; m->vals && i <= m->mask; i++) {
        if (!m->vals[i])
            continue;
        uint32_t *v = find_slot(&bigger, m->keys[i]);
        bigger.keys[v - bigger.vals] = m->keys[i];
        *v = m->vals[i];
    }
    tf_idmap_free(m);
    *m = bigger;
    return 0;
}

int tf_idmap_put(tf_idmap *m, uint32_t key, uint32_t pos)
{
    if (pos == UINT32_MAX)
        return -1;
    if ((!m->vals || m->count + 1 > (m->mask + 1) / 2) && grow(m) < 0)
        return -1;
    uint32_t *v = find_slot(m, key);
    if (!*v)
        m->count++;
    m->keys[v - m->vals] = key;
    *v = pos + 1;
    return 0;
}

int tf_idmap_get(const tf_idmap *m, uint32_t key, uint32_t *pos)
{
    if (!m->vals)
        return 0;
    const uint32_t *v = find_slot(m, key);
    if (!*v)
        return 0;
    *pos = *v - 1;
    return 1;
}

void tf_idmap_free(tf_idmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}
