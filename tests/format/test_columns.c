/*
 * test_columns.c - column blocks (FORMAT.md section 15): the rank sets
 * against a plain list, blocks decoded back to the very records they stand
 * for (a pool stream, arbitrary events, a time off the unit), what the
 * predictions save on a pool stream, damaged blocks, and whole logs read
 * through the reader with and without blocks.
 */
#include <zstd.h>

#include "columns.h"
#include "items_records.h"
#include "pool_stream.h"
#include "varint.h"

#define BLOCK_BYTES_HASH 0x0c61860eede6c55cull   /* test_block_bytes: the blocks of c6a1984 */

static const tf_header header = {
    .pid = 77, .ppid = 1, .hostname = "h", .cmdline = "c", .exe = "e", .tracer_version = "t",
    .settings = "time_unit_ns=1000", .python_version = "",
};

/* ------------------------------------------------------------ rank sets */

typedef struct naive { uint64_t addr, val, stamp; } naive;

static void test_rankset(void)
{
    static tf_rankset s;
    static naive list[TF_RANK_WINDOW + 1];
    unsigned n = 0;
    uint64_t added = 0, rng = 99;
    tf_rankset_clear(&s);
    for (int step = 0; step < 60000; step++) {
        /* few distinct addresses, so adds often move and removes often hit;
         * phases with many, so the window pushes old ones out */
        uint64_t range = step % 20000 < 10000 ? 300 : 100000;
        uint64_t a = 0x1000 * (1 + tf_test_rand(&rng) % range);
        unsigned i;
        for (i = 0; i < n && list[i].addr != a; i++)
            ;
        int held = i < n;
        switch (tf_test_rand(&rng) % 4) {
        case 0: case 1: {
            if (held)
                memmove(list + i, list + i + 1, (--n - i) * sizeof *list);
            if (n && list[0].stamp + TF_RANK_WINDOW == added)
                memmove(list, list + 1, --n * sizeof *list);
            list[n++] = (naive){ a, step, added++ };
            tf_rankset_add(&s, a, (uint64_t)step);
            break;
        }
        case 2: {
            uint64_t v = 0;
            CHECK(tf_rankset_remove(&s, a, &v) == held);
            if (held) {
                CHECK(v == list[i].val);
                memmove(list + i, list + i + 1, (--n - i) * sizeof *list);
            }
            break;
        }
        default: {
            uint64_t v = 0;
            CHECK(tf_rankset_rank(&s, a) == (held ? n - i : 0));
            CHECK(tf_rankset_get(&s, a, &v) == held && (!held || v == list[i].val));
            if (n) {
                uint32_t r = 1 + (uint32_t)(tf_test_rand(&rng) % n);
                CHECK(tf_rankset_at(&s, r) == list[n - r].addr);
                /* What a decoder does: the address of a rank, then (the
                 * slot remembered) its size and its removal. */
                if (tf_test_rand(&rng) % 2) {
                    CHECK(tf_rankset_get(&s, list[n - r].addr, &v) && v == list[n - r].val);
                    CHECK(tf_rankset_remove(&s, list[n - r].addr, &v) && v == list[n - r].val);
                    memmove(list + n - r, list + n - r + 1, (r - 1) * sizeof *list);
                    n--;
                }
            }
            CHECK(tf_rankset_at(&s, n + 1) == 0);
        }
        }
        CHECK(s.count == n);
        /* Now and then every rank both ways: deep ones too, across the
         * ring's wrap. */
        if (step % 997 == 0)
            for (unsigned r = 1; r <= n; r++) {
                CHECK(tf_rankset_at(&s, r) == list[n - r].addr);
                CHECK(tf_rankset_rank(&s, list[n - r].addr) == r);
            }
        if (tf_test_failures)
            return;
    }
    tf_rankset_clear(&s);
    CHECK(s.count == 0 && tf_rankset_rank(&s, 0x1000) == 0);
}

/* Every pattern of held slots in every byte of a word: the address of each
 * rank (the bit select's table in rankset.c), and each held one's rank. */
static void test_rankset_bytes(void)
{
    static tf_rankset s;
    for (unsigned byte = 0; byte < 8; byte++)
        for (unsigned pattern = 0; pattern < 256; pattern++) {
            tf_rankset_clear(&s);
            for (unsigned slot = 0; slot < 64; slot++)
                tf_rankset_add(&s, 0x1000 * (slot + 1), slot);
            for (unsigned bit = 0; bit < 8; bit++)
                if (!(pattern >> bit & 1))
                    CHECK(tf_rankset_remove(&s, 0x1000 * (8 * byte + bit + 1), NULL));
            uint32_t r = 0;
            for (unsigned slot = 64; slot-- > 0;) {   /* the newest first */
                unsigned in_byte = slot / 8 == byte, held = !in_byte || pattern >> slot % 8 & 1;
                if (!held)
                    continue;
                r++;
                CHECK(tf_rankset_at(&s, r) == 0x1000 * (slot + 1));
                CHECK(tf_rankset_rank(&s, 0x1000 * (slot + 1)) == r);
            }
            CHECK(s.count == r && tf_rankset_at(&s, r + 1) == 0);
            if (tf_test_failures)
                return;
        }
}

/* ------------------------------------------------------------ blocks */

static tf_colenc *enc;
static tf_colstate dec_state;

/* The COLUMNS record the encoder made, in one buffer. */
static uint8_t *block_bytes(size_t *len)
{
    const void *data[TF_COLUMNS + 1];
    size_t lens[TF_COLUMNS + 1];
    int n = tf_colenc_pieces(enc, data, lens);
    *len = tf_colenc_size(enc);
    uint8_t *b = malloc(*len), *p = b;
    for (int i = 0; i < n; i++) {
        memcpy(p, data[i], lens[i]);
        p += lens[i];
    }
    CHECK((size_t)(p - b) == *len);
    return b;
}

/* The payload of a COLUMNS record. */
static const uint8_t *payload_of(const uint8_t *rec, size_t len, size_t *plen)
{
    tf_cursor c = { rec, rec + len, 0 };
    CHECK(tf_get_uv(&c) == TF_REC_COLUMNS);
    uint64_t n = tf_get_uv(&c);
    CHECK(!c.bad && n == (uint64_t)(c.end - c.p));
    *plen = (size_t)n;
    return c.p;
}

/* The block decoded as a reader takes it (tf_columns_decode_items), written
 * back as records: the chunk, byte for byte. */
static void items_match(const uint8_t *payload, size_t plen, const tf_chunk *c)
{
    tf_event *items = NULL;
    size_t nitems = 0, items_cap = 0;
    const char *why = "";
    CHECK(tf_columns_decode_items(&dec_state, payload, plen, &items, &nitems, &items_cap, &why) == 0);
    size_t len = 0;
    uint8_t *again = items_as_records(payload, items, nitems, &len);
    CHECK(again && len == c->len && !memcmp(again, c->data, c->len));
    free(again);
    free(items);
}

/* Encodes a chunk, decodes it back (as records and as items) and compares
 * byte for byte; returns the encoder's verdict. */
static int roundtrip(const tf_chunk *c, uint64_t tunit)
{
    int rc = tf_columns_encode(enc, c->data, c->len, tunit);
    if (rc < 0)
        return rc;
    size_t len, plen;
    uint8_t *b = block_bytes(&len);
    const uint8_t *payload = payload_of(b, len, &plen);
    uint8_t *out = NULL;
    size_t out_len = 0, out_cap = 0;
    const char *why = "";
    CHECK(tf_columns_decode(&dec_state, payload, plen, &out, &out_len, &out_cap, &why) == 0);
    CHECK(out_len == c->len && !memcmp(out, c->data, c->len));
    if (out_len != c->len || memcmp(out, c->data, c->len))
        fprintf(stderr, "  decoded %zu bytes of %zu (%s)\n", out_len, c->len, why);
    items_match(payload, plen, c);
    free(out);
    free(b);
    return rc;
}

static size_t zsize(const void *p, size_t n)
{
    void *z = malloc(ZSTD_compressBound(n));
    size_t k = ZSTD_compress(z, ZSTD_compressBound(n), p, n, 1);
    free(z);
    return k;
}

static void test_pool_stream(void)
{
    tf_writer *w = tf_writer_new(&header);
    tf_chunk c = { 0 };
    tf_writer_seal(w, &c);
    CHECK(tf_columns_encode(enc, c.data, c.len, 1000) < 0);   /* HEADER opens it: never a block */
    pool_stream ps;
    ps_init(&ps, w, 7, 0);
    size_t records_z = 0, block_z = 0, events = 0;
    size_t col[TF_COLUMNS] = { 0 };
    for (int frame = 0; frame < 12; frame++) {
        uint64_t first = ps.seq;
        for (int i = 0; i < 3000; i++)
            ps_step(&ps, w);
        tf_writer_seal(w, &c);
        CHECK(roundtrip(&c, 1000) == 0);
        events += ps.seq - first;
        records_z += zsize(c.data, c.len);
        size_t len;
        uint8_t *b = block_bytes(&len);
        block_z += zsize(b, len);
        free(b);
        for (int k = 0; k < TF_COLUMNS; k++)
            col[k] += enc->col[k].len;
    }
    double rec = (double)records_z / (double)events, blk = (double)block_z / (double)events;
    printf("pool stream: %zu events, records %.2f bytes/event, blocks %.2f bytes/event\n", events,
           rec, blk);
    for (int k = 0; k < TF_COLUMNS; k++)
        if (col[k])
            printf("  %-20s %8zu bytes raw\n", tf_column_name((unsigned)k), col[k]);
    /* What the predictions must do on such a stream (each fails without
     * its prediction): */
    CHECK(blk < 0.6 * rec);
    /* every free names a live block (a rank, no literal), and an allocation
     * that reuses room names it by rank: literals only for new segments */
    CHECK(col[TF_COL_DEV_LIT] < events / 8);
    /* the pool, an op_end's op and the parent op are predicted: only the
     * op of each op_begin (a third of the events) is left, and few parents */
    CHECK(col[TF_COL_SMALL] < events * 4 / 10);
    CHECK(col[TF_COL_PARENT] < events / 20);
    /* op ends name the open op; grants are requests rounded; free sizes
     * are the blocks' */
    CHECK(col[TF_COL_SEQREL] < events / 20);
    CHECK(col[TF_COL_SIZE] < events);
    tf_chunk_free(&c);
    tf_writer_free(w);
}

static void test_arbitrary(void)
{
    tf_writer *w = tf_writer_new(&header);
    tf_chunk c = { 0 };
    tf_writer_seal(w, &c);
    uint64_t rng = 5;
    tf_event e;
    int blocks = 0;
    for (int frame = 0; frame < 20; frame++) {
        for (int i = 0; i < 400; i++) {
            tf_test_random_event(&rng, 1 + (uint64_t)frame * 1000 + (uint64_t)i, &e);
            if (i % 3 == 0) {   /* now and then a familiar value, so ranks are used */
                e.t_ns = (uint64_t)i * 1000;
                e.tid = 7;
            }
            tf_write_event(w, &e);
        }
        tf_writer_seal(w, &c);
        /* not smaller than the records, most likely; decoded back all the same */
        int rc = roundtrip(&c, frame % 2 ? 1000 : 1);
        CHECK(rc >= 0);
        blocks += rc >= 0;
    }
    CHECK(blocks == 20);
    tf_chunk_free(&c);
    tf_writer_free(w);
}

/* FNV-1a of the block the encoder made (the COLUMNS record, whole), and of
 * the encoder's verdict. */
static uint64_t block_hash(uint64_t h, int rc)
{
    h = (h ^ (uint64_t)(rc + 2)) * 0x100000001b3ull;
    if (rc < 0)
        return h;
    const void *data[TF_COLUMNS + 1];
    size_t lens[TF_COLUMNS + 1];
    int n = tf_colenc_pieces(enc, data, lens);
    for (int i = 0; i < n; i++)
        for (size_t k = 0; k < lens[i]; k++)
            h = (h ^ ((const uint8_t *)data[i])[k]) * 0x100000001b3ull;
    return h;
}

/* The blocks' bytes are the format: the encoder must make the very bytes it
 * made when this test was written (c6a1984), whatever is done to its speed.
 * A pool stream (times in us) and arbitrary events of every kind (in us and
 * in ns), hashed; a round trip alone would pass an encoder that predicted
 * differently in both directions. */
static void test_block_bytes(void)
{
    tf_writer *w = tf_writer_new(&header);
    tf_chunk c = { 0 };
    tf_writer_seal(w, &c);
    uint64_t h = 0xcbf29ce484222325ull;
    pool_stream ps;
    ps_init(&ps, w, 11, 0);
    for (int frame = 0; frame < 6; frame++) {
        for (int i = 0; i < 2000; i++)
            ps_step(&ps, w);
        tf_writer_seal(w, &c);
        h = block_hash(h, tf_columns_encode(enc, c.data, c.len, 1000));
    }
    uint64_t rng = 9, seq = ps.seq;
    tf_event e;
    for (int frame = 0; frame < 6; frame++) {
        for (int i = 0; i < 500; i++) {
            tf_test_random_event(&rng, ++seq, &e);
            if (i % 3 == 0) {
                e.t_ns = (uint64_t)i * 1000;
                e.tid = 7;
            }
            tf_write_event(w, &e);
        }
        tf_writer_seal(w, &c);
        h = block_hash(h, tf_columns_encode(enc, c.data, c.len, frame % 2 ? 1000 : 1));
    }
    printf("block bytes: FNV-1a %016llx\n", (unsigned long long)h);
    CHECK(h == BLOCK_BYTES_HASH);
    tf_chunk_free(&c);
    tf_writer_free(w);
}

/* Times that are not whole microseconds in a log that says they are: the
 * block counts in ns by itself. */
static void test_time_off_unit(void)
{
    tf_writer *w = tf_writer_new(&header);
    tf_chunk c = { 0 };
    tf_writer_seal(w, &c);
    pool_stream ps;
    ps_init(&ps, w, 3, 0);
    for (int i = 0; i < 500; i++)
        ps_step(&ps, w);
    ps.t += 7;
    for (int i = 0; i < 500; i++)
        ps_step(&ps, w);
    tf_writer_seal(w, &c);
    CHECK(roundtrip(&c, 1000) == 0);
    tf_cursor h = { enc->head, enc->head + enc->head_len, 0 };
    tf_get_uv(&h);
    tf_get_uv(&h);
    CHECK(tf_get_uv(&h) == 1);   /* the block's unit */
    /* A unit neither 1 us nor 1 ns (TRACE_TIME_UNIT_NS=250): kept when the
     * times are whole units, and the times come back. */
    for (int i = 0; i < 500; i++)
        ps_step(&ps, w);
    tf_writer_seal(w, &c);
    CHECK(roundtrip(&c, 250) == 0);
    h = (tf_cursor){ enc->head, enc->head + enc->head_len, 0 };
    tf_get_uv(&h);
    tf_get_uv(&h);
    CHECK(tf_get_uv(&h) == 250);
    tf_chunk_free(&c);
    tf_writer_free(w);
}

/* The block's unit of time steps, unit by unit: odd, even, a power of two,
 * a large prime; steps forward and back, small and huge.  All multiples:
 * the block keeps the unit and every time comes back.  One step off by one
 * ns: the block counts in ns.  (The encoder divides by the unit without a
 * divide instruction: this is what says it divides right.) */
static void test_time_steps(void)
{
    static const uint64_t units[] = { 1, 3, 7, 250, 1000, 1024, 4096, 1000000007 };
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
        uint64_t unit = units[u];
        for (int off = 0; off < 2; off++) {
            tf_writer *w = tf_writer_new(&header);
            tf_chunk c = { 0 };
            tf_writer_seal(w, &c);
            const int64_t k[] = { 0, 1, -1, 5, -3, 127, 128, -200000, 1000000, (int64_t)1 << 40,
                                  -((int64_t)1 << 40), 2, (int64_t)1 << 50, -((int64_t)1 << 50) };
            uint64_t t = ((uint64_t)1 << 61) / unit * unit;
            uint64_t seq = 0;
            for (size_t i = 0; i < 3 * sizeof k / sizeof k[0]; i++) {
                int64_t steps = k[i % (sizeof k / sizeof k[0])];
                if (unit > ((uint64_t)1 << 62) / ((uint64_t)1 << 50))
                    steps %= 1 << 20;   /* the times stay in range */
                t += (uint64_t)steps * unit;
                if (off && i == 20 && unit > 1)
                    t += 1;
                tf_event e;
                tf_event_init(&e, TF_EV_MARK);
                e.seq = ++seq;
                e.t_ns = t;
                e.tid = 77;
                tf_write_event(w, &e);
            }
            tf_writer_seal(w, &c);
            CHECK(roundtrip(&c, unit) == 0);
            tf_cursor h = { enc->head, enc->head + enc->head_len, 0 };
            tf_get_uv(&h);
            tf_get_uv(&h);
            CHECK(tf_get_uv(&h) == (off && unit > 1 ? 1 : unit));
            tf_chunk_free(&c);
            tf_writer_free(w);
        }
    }
}

/* Damaged blocks: refused or decoded to something, never a crash or a read
 * past the block (the sanitizer build checks that). */
static void test_damage(void)
{
    tf_writer *w = tf_writer_new(&header);
    tf_chunk c = { 0 };
    tf_writer_seal(w, &c);
    pool_stream ps;
    ps_init(&ps, w, 11, 0);
    for (int i = 0; i < 2000; i++)
        ps_step(&ps, w);
    tf_writer_seal(w, &c);
    CHECK(tf_columns_encode(enc, c.data, c.len, 1000) == 0);
    size_t len, plen;
    uint8_t *b = block_bytes(&len);
    const uint8_t *payload = payload_of(b, len, &plen);
    uint64_t rng = 1;
    int refused = 0;
    for (int trial = 0; trial < 3000; trial++) {
        size_t n = trial % 3 == 0 ? (size_t)(tf_test_rand(&rng) % plen) : plen;
        uint8_t *d = malloc(n ? n : 1);
        memcpy(d, payload, n);
        if (trial % 3)
            for (int k = 0; k < 1 + trial % 4; k++)
                d[tf_test_rand(&rng) % n] ^= (uint8_t)(1 + tf_test_rand(&rng) % 255);
        uint8_t *out = NULL;
        size_t out_len = 0, out_cap = 0;
        const char *why = NULL;
        if (tf_columns_decode(&dec_state, d, n, &out, &out_len, &out_cap, &why) < 0) {
            refused++;
            CHECK(why != NULL);
        }
        free(out);
        free(d);
    }
    CHECK(refused > 2000);   /* most damage is seen: columns must end together */
    free(b);
    tf_chunk_free(&c);
    tf_writer_free(w);
}

/* ------------------------------------------------------------ whole logs */

/* A log of the pool stream, frames as blocks (enc) or records (NULL). */
static uint8_t *write_log(tf_colenc *e, size_t *len)
{
    tf_test_file f = tf_test_file_new();
    tf_writer *w = tf_writer_new(&header);
    tf_chunk c = { 0 };
    pool_stream ps;
    ps_init(&ps, w, 21, 0);
    for (int frame = 0; frame < 6; frame++) {
        for (int i = 0; i < 2000; i++)
            ps_step(&ps, w);
        tf_writer_seal(w, &c);
        CHECK(tf_chunk_write_columns(f.fd, &c, e, 1000, NULL, 1) == 0);
    }
    tf_event end = { .kind = TF_EV_END, .seq = ++ps.seq, .t_ns = ps.t };
    tf_write_event(w, &end);
    tf_writer_seal(w, &c);
    CHECK(tf_chunk_write_columns(f.fd, &c, e, 1000, NULL, 1) == 0);
    tf_chunk_free(&c);
    tf_writer_free(w);
    uint8_t *data = tf_test_slurp(f.fd, len);
    close(f.fd);
    return data;
}

static void test_reader(void)
{
    size_t rlen, blen;
    uint8_t *records = write_log(NULL, &rlen), *blocks = write_log(enc, &blen);
    printf("log: %zu bytes as records, %zu with blocks\n", rlen, blen);
    CHECK(blen < rlen * 6 / 10);
    char err[256];
    tf_reader *a = tf_reader_open_mem(records, rlen, err, sizeof err);
    tf_reader *b = tf_reader_open_mem(blocks, blen, err, sizeof err);
    CHECK(a && b);
    if (!a || !b)
        return;
    CHECK(tf_reader_header(b)->version_major == TF_VERSION_MAJOR);
    tf_event x, y;
    uint64_t n = 0;
    for (;;) {
        int ha = tf_reader_next(a, &x), hb = tf_reader_next(b, &y);
        CHECK(ha == hb);
        if (!ha || !hb)
            break;
        CHECK(!memcmp(&x, &y, sizeof x));
        n++;
    }
    CHECK(n > 12000);
    CHECK(tf_reader_status(b)->clean_end && !tf_reader_status(b)->corrupt_frames);
    tf_reader_close(a);
    tf_reader_close(b);

    /* Cut inside the last block but one: the events before it, none of it
     * (a block's columns are only whole together), and "truncated". */
    size_t cut = blen - 200;
    tf_reader *r = tf_reader_open_mem(blocks, cut, err, sizeof err);
    CHECK(r != NULL);
    uint64_t got = 0;
    while (r && tf_reader_next(r, &y))
        got++;
    if (r) {
        CHECK(got > 0 && got < n && tf_reader_status(r)->truncated);
        CHECK(!tf_reader_status(r)->corrupt_frames);
        tf_reader_close(r);
    }
    free(records);
    free(blocks);
}

/* An event record whose length says one byte less than its fields take:
 * the encoder and the reader read fields with a cursor that runs past the
 * payload (records.h's unrolled varints want ten bytes), and must still
 * refuse it as a cursor that stopped at the payload's end did.  The
 * encoder: no block.  The reader (records): the frame is corrupt, the
 * events before the record are read and the frame before is whole. */
static void test_field_past_payload(void)
{
    tf_test_file f = tf_test_file_new();
    tf_writer *w = tf_writer_new(&header);
    tf_chunk c = { 0 };
    pool_stream ps;
    ps_init(&ps, w, 5, 0);
    for (int i = 0; i < 300; i++)
        ps_step(&ps, w);
    tf_writer_seal(w, &c);
    uint64_t first = ps.seq;
    CHECK(tf_chunk_write_columns(f.fd, &c, NULL, 1000, NULL, 1) == 0);
    for (int i = 0; i < 300; i++)
        ps_step(&ps, w);
    tf_writer_seal(w, &c);
    /* the 100th event record of the second chunk */
    tf_cursor r = { c.data, c.data + c.len, 0 };
    uint8_t *len_at = NULL;
    int events = 0;
    while (r.p < r.end && !len_at) {
        uint64_t kind = tf_get_uv(&r);
        const uint8_t *lp = r.p;
        uint64_t n = tf_get_uv(&r);
        if (kind >= 32 && ++events == 100 && n >= 3)
            len_at = c.data + (lp - c.data);
        r.p += n;
    }
    CHECK(len_at && *len_at < 0x80);
    if (!len_at)
        return;
    CHECK(tf_columns_encode(enc, c.data, c.len, 1000) == 0);
    --*len_at;
    CHECK(tf_columns_encode(enc, c.data, c.len, 1000) < 0);
    CHECK(tf_chunk_write_columns(f.fd, &c, NULL, 1000, NULL, 1) == 0);
    size_t len;
    uint8_t *log = tf_test_slurp(f.fd, &len);
    close(f.fd);
    char err[256];
    tf_reader *rd = tf_reader_open_mem(log, len, err, sizeof err);
    CHECK(rd != NULL);
    tf_event e;
    uint64_t got = 0;
    while (rd && tf_reader_next(rd, &e))
        got++;
    if (rd) {
        CHECK(tf_reader_status(rd)->corrupt_frames == 1);
        CHECK(got == first + 99);   /* the first frame, and 99 events of the second */
        tf_reader_close(rd);
    }
    free(log);
    tf_chunk_free(&c);
    tf_writer_free(w);
}

int main(void)
{
    enc = tf_colenc_new();
    CHECK(enc != NULL);
    if (!enc)
        return 1;
    /* Ranks counted every way: the CPU's POPCNT and PDEP, where it has
     * them, the portable count and select, POPCNT and the table select. */
    for (int portable = 0; portable < 3; portable++) {
        tf_rankset_portable(portable);
        test_rankset();
        test_rankset_bytes();
    }
    tf_rankset_portable(0);
    test_pool_stream();
    test_arbitrary();
    test_block_bytes();
    test_field_past_payload();
    test_time_off_unit();
    test_time_steps();
    test_damage();
    test_reader();
    tf_colenc_free(enc);
    return tf_test_done("format.columns");
}
