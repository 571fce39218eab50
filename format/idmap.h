/*
 * idmap.h - a map from 32-bit ids (string ids, tids, pool ids) to positions
 * in the reader's lists.  Ids in a damaged or hostile file can be anything,
 * so they are hashed rather than used as array indices: memory stays
 * proportional to the records actually read.
 */
#ifndef TF_IDMAP_H
#define TF_IDMAP_H

#include <stdint.h>

typedef struct tf_idmap {
    uint32_t *keys;
    uint32_t *vals;   /* position + 1; 0 marks an empty slot */
    uint32_t mask, count;
} tf_idmap;

/* Set key -> pos (replacing an earlier mapping).  -1 when out of memory. */
int tf_idmap_put(tf_idmap *m, uint32_t key, uint32_t pos);
/* 1 with *pos set when key is present, else 0. */
int tf_idmap_get(const tf_idmap *m, uint32_t key, uint32_t *pos);
void tf_idmap_free(tf_idmap *m);

#endif
