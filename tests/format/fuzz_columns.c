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
#include "items_records.h"
#include "trace_format.h"
#include "varint.h"

static tf_colstate *st;
static tf_colenc *enc;

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
    if (decoded != as_items)
        abort();
    if (decoded) {
        size_t len = 0;
        uint8_t *rec = items_as_records(data, items, nitems, &len);
        if (rec && (len != out_len || memcmp(rec, out, len) != 0))
            abort();
        free(rec);
    }
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
