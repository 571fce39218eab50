/*
 * items_records.h - a column block's items (tf_columns_decode_items) written
 * back as the records they stand for, for tests that compare the reader's
 * way of decoding a block with tf_columns_decode's.
 */
#ifndef ITEMS_RECORDS_H
#define ITEMS_RECORDS_H

#include <stdlib.h>
#include <string.h>

#include "columns.h"
#include "records.h"
#include "varint.h"

/* A malloc'd buffer of the records, *len bytes (NULL when out of memory).
 * block: the payload the items were decoded from (their definitions'
 * bytes are there). */
static inline uint8_t *items_as_records(const uint8_t *block, const tf_event *items, size_t nitems,
                                        size_t *len)
{
    size_t cap = 1;
    for (size_t i = 0; i < nitems; i++)
        cap += 2 * TF_VARINT_MAX + (items[i].kind >= 32 ? TF_EVENT_PAYLOAD_MAX : items[i].t_ns);
    uint8_t *buf = malloc(cap), *p = buf;
    if (!buf)
        return NULL;
    tf_bases b = { 0 };
    for (size_t i = 0; i < nitems; i++) {
        const tf_event *it = &items[i];
        if (it->kind >= 32) {
            p = tf_put_event(&b, p, it);
            continue;
        }
        p = tf_put_uv(p, it->kind);
        p = tf_put_uv(p, it->t_ns);
        memcpy(p, block + it->seq, it->t_ns);
        if (it->kind == TF_REC_FRAME) {   /* as a reader: a frame's bases */
            tf_cursor f = { p, p + it->t_ns, 0 };
            tf_get_uv(&f);
            uint64_t seq = tf_get_uv(&f), t = tf_get_uv(&f);
            tf_bases_frame(&b, seq, t);
        }
        p += it->t_ns;
    }
    *len = (size_t)(p - buf);
    return buf;
}

#endif
