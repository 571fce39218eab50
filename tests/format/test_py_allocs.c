/*
 * test_py_allocs.c - PY_ALLOCS_SPLIT records (FORMAT.md section 7, 2.8) and
 * the PY_ALLOCS records of 2.7 logs: py_alloc events written with
 * tf_write_py_allocs come back from the reader exactly as the same events
 * written as py_alloc records (tf_write_py_alloc) do, and so do they from
 * the same log with each record rewritten as 2.7 wrote it (to_2_7),
 * whatever breaks a run (another thread, parent, domain, a native stack, a
 * gap in seqs, a time off the log's unit, another event, a seal, a rewind,
 * the one-byte length); a loop's allocations take a few bytes each; a
 * reader that skips the kind (2.6) keeps every other event's seq, time and
 * thread; FRAME and marks name the last allocation's seq and time; damage
 * is found; an allocation a class's pool hands out next costs its address
 * one 0 byte, in a stream of them.
 */
#include "columns.h"
#include "records.h"
#include "tf_test.h"

static const tf_header header = {
    .version_major = TF_VERSION_MAJOR, .pid = 7, .cmdline = "allocs", .settings = "flush_ms=100;time_unit_ns=1000",
};

/* Both writers in lockstep: `plain` writes py_alloc records, `runs`
 * PY_ALLOCS records; every other call goes to both. */
typedef struct pair {
    tf_writer *plain, *runs;
    tf_test_file fplain, fruns;
    tf_test_file fold;   /* runs' chunks with each record as 2.7 wrote it */
    tf_chunk chunk;
} pair;

/* A sealed chunk with its PY_ALLOCS_SPLIT records rewritten as the
 * PY_ALLOCS records 2.7's writer made of the same allocations (the same
 * first allocation's bytes, then tf_put_py_allocs_join each): a 2.7 log,
 * which must read the same. */
static tf_chunk to_2_7(const tf_chunk *in)
{
    tf_chunk out = { malloc(2 * in->len + 64), 0, 2 * in->len + 64 };
    CHECK(out.data != NULL);
    tf_cursor cur = { in->data, in->data + in->len, 0 };
    while (cur.p < cur.end && !cur.bad) {
        const uint8_t *rec = cur.p;
        uint64_t kind = tf_get_uv(&cur), len;
        const uint8_t *at = tf_get_bytes(&cur, &len);
        if (kind != TF_EV_PY_ALLOCS_SPLIT) {
            memcpy(out.data + out.len, rec, (size_t)(cur.p - rec));
            out.len += (size_t)(cur.p - rec);
            continue;
        }
        tf_bases b = { 0 };
        tf_cursor pc = { at, at + len, 0 };
        tf_py_allocs_run run;
        tf_event prev, e;
        CHECK(tf_get_py_allocs_split(&b, &pc, &prev, &run) == 1);
        static uint8_t body[1 << 17];
        size_t first = (size_t)(pc.p - at);   /* up to count and extra */
        memcpy(body, at, first);
        uint8_t *q = body + first;
        int rc;
        while ((rc = tf_get_py_allocs_split_next(&run, &prev, &e)) == 1) {
            q = tf_put_py_allocs_join(q, (e.t_ns - prev.t_ns) / run.unit, e.py_stack, prev.py_stack, e.u.host.size,
                                      prev.u.host.size, e.u.host.api, e.u.host.ptr, prev.u.host.ptr);
            prev = e;
        }
        CHECK(rc == 0);
        uint8_t *o = tf_put_uv(out.data + out.len, TF_EV_PY_ALLOCS);
        o = tf_put_uv(o, (uint64_t)(q - body));
        memcpy(o, body, (size_t)(q - body));
        out.len = (size_t)(o + (q - body) - out.data);
    }
    CHECK(!cur.bad);
    return out;
}

/* A sealed chunk of `runs` into its file, and as 2.7 wrote it into fold. */
static int write_runs(pair *p, const tf_chunk *c)
{
    tf_chunk old = to_2_7(c);
    int rc = tf_chunk_write(p->fruns.fd, c, NULL, 1) | tf_chunk_write(p->fold.fd, &old, NULL, 1);
    free(old.data);
    return rc;
}

static void put_alloc(pair *p, const tf_event *e)
{
    tf_write_py_alloc(p->plain, e);
    tf_write_py_allocs(p->runs, e);
}

static void put_event(pair *p, const tf_event *e)
{
    tf_write_event(p->plain, e);
    tf_write_event(p->runs, e);
}

static void flush_both(pair *p)
{
    tf_test_flush(p->plain, p->fplain.fd, &p->chunk);
    tf_writer_seal(p->runs, &p->chunk);
    CHECK(write_runs(p, &p->chunk) == 0);
}

static tf_event an_alloc(uint64_t seq, uint64_t t_ns, uint32_t py_stack, uint64_t ptr, uint64_t size)
{
    tf_event e;
    tf_event_init(&e, TF_EV_PY_ALLOC);
    e.seq = seq;
    e.tid = 41;
    e.t_ns = t_ns;
    e.py_stack = py_stack;
    e.u.host.domain = TF_HOST_OBJ;
    e.u.host.ptr = ptr;
    e.u.host.size = size;
    return e;
}

/* Records of kind `kind` in a sealed chunk, and the longest payload. */
static int count_kind(const tf_chunk *c, uint32_t kind, uint64_t *longest)
{
    tf_cursor cur = { c->data, c->data + c->len, 0 };
    int n = 0;
    while (cur.p < cur.end && !cur.bad) {
        uint64_t k = tf_get_uv(&cur), len;
        tf_get_bytes(&cur, &len);
        if (k == kind) {
            n++;
            if (longest && len > *longest)
                *longest = len;
        }
    }
    CHECK(!cur.bad);
    return n;
}

/* Both logs read the same, event by event; returns the count. */
static uint64_t same_events_of(const char *plain, const char *runs)
{
    char err[256];
    tf_reader *a = tf_reader_open(plain, err, sizeof err);
    tf_reader *b = tf_reader_open(runs, err, sizeof err);
    CHECK(a && b);
    if (!a || !b)
        return 0;
    tf_event ea, eb;
    uint64_t n = 0;
    for (;;) {
        int ra = tf_reader_next(a, &ea), rb = tf_reader_next(b, &eb);
        CHECK(ra == rb);
        if (ra != 1 || rb != 1)
            break;
        if (memcmp(&ea, &eb, sizeof ea) != 0) {
            fprintf(stderr, "event %llu differs: seq %llu/%llu t %llu/%llu ptr %llx/%llx\n",
                    (unsigned long long)n, (unsigned long long)ea.seq, (unsigned long long)eb.seq,
                    (unsigned long long)ea.t_ns, (unsigned long long)eb.t_ns,
                    (unsigned long long)ea.u.host.ptr, (unsigned long long)eb.u.host.ptr);
            CHECK(0);
            break;
        }
        n++;
    }
    const tf_read_status *sa = tf_reader_status(a), *sb = tf_reader_status(b);
    CHECK(sb->clean_end && sb->corrupt_frames == 0 && sb->events == sa->events);
    CHECK(tf_reader_damage(b) == NULL);
    if (tf_reader_damage(b))
        fprintf(stderr, "%s\n", tf_reader_damage(b));
    tf_reader_close(a);
    tf_reader_close(b);
    return n;
}

static uint64_t same_events(pair *p)
{
    uint64_t n = same_events_of(p->fplain.path, p->fruns.path);
    CHECK(same_events_of(p->fplain.path, p->fold.path) == n);
    return n;
}

/* A loop's allocations: the same few stacks and sizes, addresses close
 * together, times a microsecond or two apart. */
static void loop_allocs(pair *p, uint64_t *seq, uint64_t *t, int n)
{
    uint64_t ptr = 0x7f3a00100000ull;
    for (int i = 0; i < n; i++) {
        *t += (i % 3 == 0) ? 1000 : 0;
        ptr += i % 5 == 4 ? 0x12340 : 0x40;
        tf_event e = an_alloc(++*seq, *t, 10 + (uint32_t)(i % 4 == 3), ptr, i % 4 == 3 ? 72 : 56);
        put_alloc(p, &e);
    }
}

/* Random py_allocs and other events: every field and break at random. */
static void random_allocs(pair *p, uint64_t *seq, uint64_t *t, int n, uint64_t *s)
{
    uint64_t ptr = 0x55555555a000ull;
    uint32_t stack = 3;
    for (int i = 0; i < n; i++) {
        uint64_t r = tf_test_rand(s);
        switch (r % 8) {
        case 0: *t += 1000 * (tf_test_rand(s) % 20); break;
        case 1: *t += tf_test_rand(s) % 5000; break;            /* off the unit: breaks */
        case 2: *t += 1000ull * (tf_test_rand(s) % 100000); break;
        default: break;
        }
        if (r >> 8 & 1)
            stack = (uint32_t)(tf_test_rand(s) % 3 == 0 ? tf_test_rand(s) : stack + tf_test_rand(s) % 7 - 3);
        ptr += (r >> 9 & 3) == 0 ? tf_test_rand(s) : (tf_test_rand(s) % 512) - 256;
        if ((r >> 12 & 31) == 0)
            *seq += 1 + tf_test_rand(s) % 3;                   /* events lost */
        tf_event e = an_alloc(++*seq, *t, stack, ptr, (r >> 20 & 3) == 0 ? tf_test_rand(s) : 32 + (r >> 24 & 3) * 16);
        e.tid = (r >> 28 & 15) == 0 ? 42 : 41;
        e.parent = (r >> 32 & 15) == 0 ? *seq - 1 : 0;
        e.u.host.domain = (r >> 36 & 31) == 0 ? 2 : TF_HOST_OBJ;
        e.u.host.api = (r >> 41 & 15) == 0 ? 3 : 0;
        e.native_stack = (r >> 45 & 31) == 0 ? 4 : 0;
        if ((r >> 50 & 31) == 0) {
            tf_event m = { .kind = TF_EV_MARK, .seq = e.seq, .tid = 41, .t_ns = *t };
            put_event(p, &m);
            continue;
        }
        if ((r >> 55 & 63) == 0)
            e.py_stack = 0;
        put_alloc(p, &e);
        if ((r >> 58 & 63) == 0)
            flush_both(p);
    }
}

/* Allocations whose time steps are whole numbers of `unit` (joined, the
 * step written in units) or not (a break), for a log of any unit: the
 * writer's test of a step (a multiply by the inverse of the unit's odd
 * part, a rotate by its trailing zeros, a compare: writer.c's unit_inv)
 * must tell them apart exactly, and a whole step come back as it went. */
static void unit_allocs(pair *p, uint64_t unit, uint64_t *seq, uint64_t *t, int n, uint64_t *s)
{
    uint64_t ptr = 0x7f0000400000ull;
    for (int i = 0; i < n; i++) {
        uint64_t r = tf_test_rand(s), k = tf_test_rand(s);
        switch (r % 8) {
        case 0: case 1: case 2: *t += unit * (k % 64); break;         /* small, whole */
        case 3: *t += unit * (k % (1ull << 20)); break;                 /* large, whole */
        case 4: *t += unit * (k % 64) + 1 + tf_test_rand(s) % (unit > 1 ? unit - 1 : 1); break;
        case 5: *t += unit > 1 ? unit - 1 : 0; break;                  /* one short of a unit */
        case 6: *t += unit * (1 + k % 4) + (unit > 1 ? unit / 2 : 0); break;
        default: break;                                                 /* the same time */
        }
        ptr += (r >> 8 & 3) == 0 ? 0x10000 : 0x40;
        tf_event e = an_alloc(++*seq, *t, 10 + (uint32_t)(r >> 12 & 3), ptr, 32 + (r >> 16 & 3) * 16);
        put_alloc(p, &e);
    }
}

int main(void)
{
    pair p = { .plain = tf_writer_new(&header), .runs = tf_writer_new(&header),
               .fplain = tf_test_file_new(), .fruns = tf_test_file_new(), .fold = tf_test_file_new() };
    uint64_t seq = 0, t = 5000000;

    /* A loop: a few bytes an allocation, in records as long as a two-byte
     * length allows (the first of them grew from a one-byte one). */
    loop_allocs(&p, &seq, &t, 10000);
    {
        tf_chunk a = { 0 }, b = { 0 };
        tf_writer_seal(p.plain, &a);
        tf_writer_seal(p.runs, &b);
        uint64_t longest = 0;
        int records = count_kind(&b, TF_EV_PY_ALLOCS_SPLIT, &longest);
        CHECK(count_kind(&b, TF_EV_PY_ALLOC, NULL) == 0);
        CHECK(records >= 2 && records <= 4);
        CHECK(longest <= TF_PY_ALLOCS_PAYLOAD_MAX && longest >= TF_PY_ALLOCS_PAYLOAD_MAX - TF_PY_ALLOCS_JOIN_MAX);
        double per = (double)b.len / 10000, plain = (double)a.len / 10000;
        printf("loop: %.2f bytes a py_alloc in PY_ALLOCS_SPLIT records, %.2f as py_alloc records, %d records\n", per,
               plain, records);
        CHECK(per < 3.5 && per < plain / 2);
        CHECK(tf_chunk_write(p.fplain.fd, &a, NULL, 1) == 0);
        CHECK(write_runs(&p, &b) == 0);
        tf_chunk_free(&a);
        tf_chunk_free(&b);
    }

    /* FRAME and marks: the last allocation's seq and time, not the bases. */
    tf_writer_mark m = tf_writer_get_mark(p.runs);
    CHECK(m.seq == seq && m.t_ns == t);

    /* Breaks, one at a time, each followed by an allocation that joins. */
    tf_event e = an_alloc(++seq, t, 10, 0x1000, 48);
    put_alloc(&p, &e);
    tf_event joined = an_alloc(++seq, t + 7000, 11, 0x1040, 48);   /* a step of 7 units: escaped */
    put_alloc(&p, &joined);
    tf_event other_tid = an_alloc(++seq, t + 8000, 11, 0x1080, 48);
    other_tid.tid = 42;
    put_alloc(&p, &other_tid);
    tf_event other_parent = an_alloc(++seq, t + 8000, 11, 0x10c0, 48);
    other_parent.tid = 42;
    other_parent.parent = seq - 1;
    put_alloc(&p, &other_parent);
    tf_event other_domain = an_alloc(++seq, t + 9000, 11, 0x1100, 48);
    other_domain.u.host.domain = 2;
    put_alloc(&p, &other_domain);
    tf_event native = an_alloc(++seq, t + 9000, 11, 0x1140, 48);
    native.native_stack = 3;
    put_alloc(&p, &native);
    tf_event off_unit = an_alloc(++seq, t + 9500, 11, 0x1180, 48);
    put_alloc(&p, &off_unit);
    tf_event realloc_api = an_alloc(++seq, t + 10500, 11, 0x11c0, 0);   /* size 0, api 3 */
    realloc_api.u.host.api = 3;
    put_alloc(&p, &realloc_api);
    seq += 3;                                                         /* events lost */
    tf_event after_gap = an_alloc(++seq, t + 11500, 0, 0x1000, 48);
    put_alloc(&p, &after_gap);
    tf_event far = an_alloc(++seq, t + 11500, 0xfffffff0u, 0xffffffffffff0000ull, UINT64_MAX);
    put_alloc(&p, &far);
    tf_event mark = { .kind = TF_EV_MARK, .seq = ++seq, .tid = 41, .t_ns = t + 12000 };
    put_event(&p, &mark);
    t += 13000;
    loop_allocs(&p, &seq, &t, 30);

    /* A 2.6 reader: no PY_ALLOCS(_SPLIT), its common fields decoded and the rest
     * skipped, every other event's seq, time and thread right. */
    {
        tf_chunk a = { 0 };
        tf_event last_mark = { .kind = TF_EV_MARK, .seq = ++seq, .tid = 42, .t_ns = t + 1000 };
        put_event(&p, &last_mark);
        tf_writer_seal(p.runs, &a);
        CHECK(count_kind(&a, TF_EV_PY_ALLOC, NULL) == 1);   /* the one with a native stack */
        CHECK(count_kind(&a, TF_EV_PY_ALLOCS_SPLIT, NULL) >= 7);
        tf_bases b = { 0 };
        tf_cursor cur = { a.data, a.data + a.len, 0 };
        int marks = 0, allocs = 0;
        while (cur.p < cur.end && !cur.bad) {
            uint64_t kind = tf_get_uv(&cur), len;
            const uint8_t *at = tf_get_bytes(&cur, &len);
            tf_cursor pc = { at, at + len, 0 };
            if (kind == TF_REC_FRAME) {
                tf_get_uv(&pc);
                uint64_t s = tf_get_uv(&pc), ft = tf_get_uv(&pc);
                CHECK(s == m.seq && ft == m.t_ns);
                tf_bases_frame(&b, s, ft);
                continue;
            }
            if (kind < 32)
                continue;
            tf_event got;
            int rc = tf_get_event(&b, (uint32_t)kind, &pc, &got);
            CHECK(kind == TF_EV_PY_ALLOCS_SPLIT ? rc == 0 : rc == 1);
            if (rc == 1 && got.kind == TF_EV_MARK) {
                const tf_event *want = marks++ ? &last_mark : &mark;
                CHECK(got.seq == want->seq && got.t_ns == want->t_ns && got.tid == want->tid);
            }
            if (rc == 1 && got.kind == TF_EV_PY_ALLOC) {
                allocs++;
                CHECK(got.seq == native.seq && got.u.host.ptr == native.u.host.ptr && got.t_ns == native.t_ns);
            }
        }
        CHECK(!cur.bad && marks == 2 && allocs == 1);
        CHECK(write_runs(&p, &a) == 0);
        tf_writer_seal(p.plain, &a);
        CHECK(tf_chunk_write(p.fplain.fd, &a, NULL, 1) == 0);
        tf_chunk_free(&a);
    }

    /* A column block holds the kinds of 2.0 only (FORMAT.md section 15):
     * a frame with PY_ALLOCS is written as records; as py_alloc records,
     * the same events make a block. */
    {
        tf_colenc *enc = tf_colenc_new();
        CHECK(enc != NULL);
        tf_chunk a = { 0 }, b = { 0 };
        loop_allocs(&p, &seq, &t, 100);
        tf_writer_seal(p.plain, &a);
        tf_writer_seal(p.runs, &b);
        CHECK(enc && tf_columns_encode(enc, a.data, a.len, 1000) == 0);
        CHECK(enc && tf_columns_encode(enc, b.data, b.len, 1000) < 0);
        CHECK(tf_chunk_write(p.fplain.fd, &a, NULL, 1) == 0);
        CHECK(write_runs(&p, &b) == 0);
        tf_chunk_free(&a);
        tf_chunk_free(&b);
        tf_colenc_free(enc);
    }

    /* A rewind drops a run half written; the log goes on from the mark. */
    m = tf_writer_get_mark(p.runs);
    tf_writer_mark mp = tf_writer_get_mark(p.plain);
    CHECK(m.seq == mp.seq && m.t_ns == mp.t_ns);
    uint64_t seq_at_mark = seq, t_at_mark = t;
    loop_allocs(&p, &seq, &t, 10);
    tf_writer_rewind(p.runs, &m);
    tf_writer_rewind(p.plain, &mp);
    seq = seq_at_mark;
    t = t_at_mark + 1000;
    loop_allocs(&p, &seq, &t, 10);
    flush_both(&p);
    /* A seal in the middle of a run: the next allocation opens a record
     * in the new frame, whose FRAME names the last allocation's time. */
    loop_allocs(&p, &seq, &t, 5);
    tf_writer_seal(p.runs, &p.chunk);
    CHECK(tf_writer_get_mark(p.runs).t_ns == t);
    CHECK(write_runs(&p, &p.chunk) == 0);
    tf_test_flush(p.plain, p.fplain.fd, &p.chunk);
    loop_allocs(&p, &seq, &t, 5);

    /* At random. */
    uint64_t s = 12345;
    for (int round = 0; round < 20; round++) {
        random_allocs(&p, &seq, &t, 500, &s);
        flush_both(&p);
    }
    tf_event end = { .kind = TF_EV_END, .seq = ++seq, .tid = 41, .t_ns = t };
    put_event(&p, &end);
    flush_both(&p);
    tf_writer_free(p.plain);
    tf_writer_free(p.runs);
    tf_chunk_free(&p.chunk);
    uint64_t n = same_events(&p);
    CHECK(n > 10000);

    /* Logs of other units: odd, even, a power of two, a large prime, the
     * largest the recorder takes (TRACE_TIME_UNIT_NS). */
    {
        static const uint64_t units[] = { 3, 10, 1024, 6000, 999999937, 1000000000 };
        for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
            char settings[64];
            snprintf(settings, sizeof settings, "flush_ms=100;time_unit_ns=%llu", (unsigned long long)units[u]);
            tf_header uh = header;
            uh.settings = settings;
            pair q = { .plain = tf_writer_new(&uh), .runs = tf_writer_new(&uh),
                       .fplain = tf_test_file_new(), .fruns = tf_test_file_new(), .fold = tf_test_file_new() };
            uint64_t qs = 0, qt = units[u] * 7;
            unit_allocs(&q, units[u], &qs, &qt, 3000, &s);
            tf_event qend = { .kind = TF_EV_END, .seq = ++qs, .tid = 41, .t_ns = qt };
            put_event(&q, &qend);
            tf_chunk a = { 0 };
            tf_writer_seal(q.runs, &a);
            /* about a quarter of the steps are off the unit: each breaks a
             * record, and the rest join */
            int records = count_kind(&a, TF_EV_PY_ALLOCS_SPLIT, NULL) + count_kind(&a, TF_EV_PY_ALLOC, NULL);
            CHECK(records > 300 && records < 1500);
            CHECK(write_runs(&q, &a) == 0);
            tf_chunk_free(&a);
            tf_test_flush(q.plain, q.fplain.fd, &q.chunk);
            tf_writer_free(q.plain);
            tf_writer_free(q.runs);
            tf_chunk_free(&q.chunk);
            CHECK(same_events(&q) == 3001);
        }
    }

    /* A writer whose header says no unit writes steps in nanoseconds. */
    {
        static const tf_header exact = { .version_major = TF_VERSION_MAJOR, .pid = 7, .cmdline = "exact" };
        pair q = { .plain = tf_writer_new(&exact), .runs = tf_writer_new(&exact),
                   .fplain = tf_test_file_new(), .fruns = tf_test_file_new(), .fold = tf_test_file_new() };
        uint64_t qs = 0, qt = 100;
        random_allocs(&q, &qs, &qt, 2000, &s);
        tf_event qend = { .kind = TF_EV_END, .seq = ++qs, .tid = 41, .t_ns = qt };
        put_event(&q, &qend);
        tf_chunk a = { 0 };
        tf_writer_seal(q.runs, &a);
        CHECK(count_kind(&a, TF_EV_PY_ALLOC, NULL) < count_kind(&a, TF_EV_PY_ALLOCS_SPLIT, NULL));
        CHECK(write_runs(&q, &a) == 0);
        tf_chunk_free(&a);
        tf_test_flush(q.plain, q.fplain.fd, &q.chunk);
        tf_writer_free(q.plain);
        tf_writer_free(q.runs);
        tf_chunk_free(&q.chunk);
        CHECK(same_events(&q) > 1500);
    }

    /* An allocation a pool hands out next, the block after its class's
     * last (48 bytes: 3 16s; 72: 80, 5 16s), two pools in turn: its address
     * costs one 0 byte, all of them a stream of 0s; in 2.7's PY_ALLOCS it
     * was each the difference from the other pool's block. */
    {
        tf_writer *w = tf_writer_new(&header);
        uint64_t a48 = 0x7f0000010000ull, a72 = 0x7f0000020000ull;
        for (int i = 0; i < 200; i++) {
            tf_event e = an_alloc(1000 + (uint64_t)i, 1000, 10, i & 1 ? (a72 += 80) : (a48 += 48), i & 1 ? 72 : 48);
            tf_write_py_allocs(w, &e);
        }
        tf_chunk a = { 0 };
        tf_writer_seal(w, &a);
        CHECK(count_kind(&a, TF_EV_PY_ALLOCS_SPLIT, NULL) == 1);
        tf_cursor cur = { a.data, a.data + a.len, 0 };
        while (cur.p < cur.end && !cur.bad) {
            uint64_t kind = tf_get_uv(&cur), len;
            const uint8_t *at = tf_get_bytes(&cur, &len);
            if (kind != TF_EV_PY_ALLOCS_SPLIT)
                continue;
            tf_bases b = { 0 };
            tf_cursor pc = { at, at + len, 0 };
            tf_py_allocs_run run;
            tf_event first;
            CHECK(tf_get_py_allocs_split(&b, &pc, &first, &run) == 1);
            CHECK(run.lead_end - run.lead == 199);
            /* the second allocation's address is a guess from the first
             * (another class): 0x10000 bytes on, 0x1000 16s, two bytes */
            CHECK(run.addr.end - run.addr.p == 199 + 1);
            int zeros = 0;
            for (const uint8_t *q = run.addr.p; q < run.addr.end; q++)
                zeros += *q == 0;
            CHECK(zeros == 198);
        }
        tf_chunk_free(&a);
        tf_writer_free(w);
    }

    /* Damage: a lead byte with bit 7 set, an address cut in the middle, a
     * presence bit past `api`, a unit of 0; in PY_ALLOCS_SPLIT, a lead byte
     * with bit 7 set, more leads than the payload holds, a byte left over
     * in the fields' stream, an address cut. */
    static const uint8_t lead_bit[] = { TF_EV_PY_ALLOCS, 8, 0x40, 0, 3, 1, 0x10, 0x80, 0, 0 };
    static const uint8_t cut[] = { TF_EV_PY_ALLOCS, 7, 0x40, 0, 3, 1, 0x10, 0x00, 0x80 };
    static const uint8_t extra_bit[] = { TF_EV_PY_ALLOCS, 6, 0x40, 2, 3, 1, 1, 0x10 };
    static const uint8_t no_unit[] = { TF_EV_PY_ALLOCS, 5, 0x40, 0, 3, 0, 0x10 };
    static const uint8_t s_lead_bit[] = { TF_EV_PY_ALLOCS_SPLIT, 11, 0x40, 0, 3, 1, 0x10, 1, 0, 0, 0, 0x80, 0 };
    static const uint8_t s_count[] = { TF_EV_PY_ALLOCS_SPLIT, 11, 0x40, 0, 3, 1, 0x10, 3, 0, 0, 0, 0, 0 };
    static const uint8_t s_left[] = { TF_EV_PY_ALLOCS_SPLIT, 12, 0x40, 0, 3, 1, 0x10, 1, 0, 1, 0, 0, 5, 0 };
    static const uint8_t s_cut[] = { TF_EV_PY_ALLOCS_SPLIT, 11, 0x40, 0, 3, 1, 0x10, 1, 0, 0, 0, 0, 0x80 };
    const uint8_t *bad[] = { lead_bit, cut, extra_bit, no_unit, s_lead_bit, s_count, s_left, s_cut };
    size_t bad_len[] = { sizeof lead_bit, sizeof cut, sizeof extra_bit, sizeof no_unit,
                         sizeof s_lead_bit, sizeof s_count, sizeof s_left, sizeof s_cut };
    tf_chunk chunk = { 0 };
    for (int k = 0; k < 8; k++) {
        tf_test_file f2 = tf_test_file_new();
        tf_writer *w2 = tf_writer_new(&header);
        tf_event first = an_alloc(1, 1000, 0, 0x10, 0);
        tf_write_py_allocs(w2, &first);
        tf_test_flush_with(w2, f2.fd, &chunk, bad[k], bad_len[k]);
        tf_event next = { .kind = TF_EV_MARK, .seq = 9, .tid = 41, .t_ns = 2000 };
        tf_write_event(w2, &next);
        tf_reader *r2 = tf_test_close_and_read(w2, &f2, &chunk);
        if (!r2)
            continue;
        tf_event got;
        CHECK(tf_reader_next(r2, &got) == 1 && got.kind == TF_EV_PY_ALLOC && got.seq == 1);
        int rc = tf_reader_next(r2, &got);
        /* a damaged record may yield the allocations before the damage (a
         * byte left in a stream is found after the last) */
        for (int i = 0; i < 2 && rc == 1 && got.kind == TF_EV_PY_ALLOC; i++)
            rc = tf_reader_next(r2, &got);
        CHECK(rc == 1 && got.kind == TF_EV_MARK && got.seq == 9);
        CHECK(tf_reader_status(r2)->corrupt_frames == 1);
        tf_reader_close(r2);
    }
    return tf_test_done("py_allocs");
}
