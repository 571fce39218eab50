/*
 * fuzz_columns.c - libFuzzer target: the column-block decoder on arbitrary
 * block payloads (FORMAT.md section 15).
 *
 * The reader's own fuzzer (fuzz_reader.c) hardly reaches it: a mutated
 * frame fails zstd's checksum before any block is decoded.  Here the input
 * is a COLUMNS record's payload itself.  What must hold: no read past the
 * input, no unbounded allocation; and what decodes is records the encoder
 * takes back: encoded again and decoded, they come out byte for byte.  The
 * reader's way (tf_columns_decode_items) agrees with the records' on every
 * input: both refuse it, or its items written as records are those records.
 */
#include <stdlib.h>
#include <string.h>

#include "columns.h"
#include "records.h"
#include "trace_format.h"
#include "varint.h"

static tf_colstate *st;
static tf_colenc *enc;

/* Items of a block as the records tf_columns_decode makes of it. */
static int items_are(const uint8_t *block, const tf_event *items, size_t nitems, const uint8_t *rec,
                     size_t rec_len)
{
    size_t cap = nitems * (2 * TF_VARINT_MAX + TF_EVENT_PAYLOAD_MAX) + rec_len + 1;
    uint8_t *buf = malloc(cap), *p = buf;
    tf_bases b = { 0 };
    for (size_t i = 0; i < nitems; i++) {
        const tf_event *it = &items[i];
        if (it->kind >= 32) {
            p = tf_put_event(&b, p, it);
            continue;
        }
        if ((size_t)(p - buf) + 2 * TF_VARINT_MAX + it->t_ns > cap)
            abort();
        p = tf_put_uv(p, it->kind);
        p = tf_put_uv(p, it->t_ns);
        memcpy(p, block + it->seq, it->t_ns);
        if (it->kind == TF_REC_FRAME) {
            tf_cursor f = { p, p + it->t_ns, 0 };
            tf_get_uv(&f);
            uint64_t seq = tf_get_uv(&f), t = tf_get_uv(&f);
            tf_bases_frame(&b, seq, t);
        }
        p += it->t_ns;
    }
    int same = (size_t)(p - buf) == rec_len && memcmp(buf, rec, rec_len) == 0;
    free(buf);
    return same;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!st && !(st = calloc(1, sizeof *st)))
        return 0;
    if (!enc && !(enc = tf_colenc_new()))
        return 0;
    uint8_t *out = NULL, *again = NULL;
    size_t out_len = 0, out_cap = 0, again_len = 0, again_cap = 0;
    const char *why = NULL;
    int decoded = tf_columns_decode(st, data, size, &out, &out_len, &out_cap, &why) == 0;
    tf_event *items = NULL;
    size_t nitems = 0, items_cap = 0;
    int as_items = tf_columns_decode_items(st, data, size, &items, &nitems, &items_cap, &why) == 0;
    if (decoded != as_items || (decoded && !items_are(data, items, nitems, out, out_len)))
        abort();
    free(items);
    if (decoded && tf_columns_encode(enc, out, out_len, 1) >= 0) {
        /* the block again, in one buffer, past its record prefix */
        const void *piece[TF_COLUMNS + 1];
        size_t len[TF_COLUMNS + 1];
        int n = tf_colenc_pieces(enc, piece, len);
        size_t total = tf_colenc_size(enc);
        uint8_t *block = malloc(total);
        size_t at = 0;
        for (int i = 0; i < n; i++) {
            memcpy(block + at, piece[i], len[i]);
            at += len[i];
        }
        tf_cursor c = { block, block + total, 0 };
        tf_get_uv(&c);
        uint64_t plen = tf_get_uv(&c);
        if (tf_columns_decode(st, c.p, plen, &again, &again_len, &again_cap, &why) != 0 ||
            again_len != out_len || memcmp(again, out, out_len) != 0)
            abort();
        free(block);
    }
    free(out);
    free(again);
    return 0;
}
