/*
 * test_py_frees.c - PY_FREES records (FORMAT.md section 7, 2.3): a run of
 * py_free events written as one record comes back from the reader as the
 * same events, one by one; what may not join a run starts another; a
 * reader that skips the kind (2.2) keeps every other event's seq; FRAME,
 * marks and segments name the last free's seq, not the delta base.
 */
#include "records.h"
#include "tf_test.h"

static const tf_header header = { .version_major = TF_VERSION_MAJOR, .pid = 7, .cmdline = "frees" };

static tf_event a_free(uint64_t seq, uint64_t ptr)
{
    tf_event e;
    tf_event_init(&e, TF_EV_PY_FREE);
    e.seq = seq;
    e.tid = 41;
    e.parent = 3;
    e.u.host.domain = TF_HOST_OBJ;
    e.u.host.ptr = ptr;
    return e;
}

/* What the recorder does with a py_free (recorder.c, record_py_free): one
 * without stacks goes by its fields (tf_write_py_free_joins_bare), which
 * give back no time: a free that joins has its record's, the time of the
 * free that began it (run_t_ns).  One with stacks goes as a tf_event. */
static uint64_t run_t_ns;
static void put_free(tf_writer *w, tf_event *e, uint64_t t_ns)
{
    if (!e->native_stack && !e->py_stack) {
        if (tf_write_py_free_joins_bare(w, e->seq, e->tid, e->parent, e->u.host.domain, e->u.host.ptr)) {
            e->t_ns = run_t_ns;
            return;
        }
    } else if (tf_write_py_free_joins(w, e)) {
        CHECK(e->t_ns == run_t_ns);
        return;
    }
    e->t_ns = run_t_ns = t_ns;
    tf_write_py_frees(w, e);
}

/* Records of kind `kind` in a sealed chunk. */
static int count_kind(const tf_chunk *c, uint32_t kind)
{
    tf_cursor cur = { c->data, c->data + c->len, 0 };
    int n = 0;
    while (cur.p < cur.end && !cur.bad) {
        uint64_t k = tf_get_uv(&cur), len;
        tf_get_bytes(&cur, &len);
        n += k == kind;
    }
    CHECK(!cur.bad);
    return n;
}

#define MAXEV 400

int main(void)
{
    tf_test_file file = tf_test_file_new();
    tf_chunk chunk = { 0 };
    tf_writer *w = tf_writer_new(&header);
    tf_event want[MAXEV];
    int n = 0;
    uint64_t seq = 0;

    /* A collection: gc_start, then 100 frees (more than one record holds)
     * with addresses going both ways and far, then gc_stop. */
    tf_event start = { .kind = TF_EV_GC_START, .seq = ++seq, .tid = 41, .t_ns = 1000 };
    tf_write_event(w, &start);
    want[n++] = start;
    uint64_t ptr = 0x7f0012345000ull;
    for (int i = 0; i < 100; i++) {
        ptr += i % 3 == 0 ? 0x50 : i % 3 == 1 ? (uint64_t)-0x2000 : 0x7ff00000ull;
        tf_event e = a_free(++seq, i == 50 ? 0xffffffffffffff00ull : ptr);
        put_free(w, &e, 2000 + (uint64_t)i);
        CHECK(e.t_ns == 2000 || e.t_ns >= 2000);   /* its record's time */
        want[n++] = e;
    }
    tf_chunk sealed = { 0 };
    tf_writer_seal(w, &sealed);
    int records = count_kind(&sealed, TF_EV_PY_FREES);
    CHECK(records >= 3 && records <= 40);         /* runs, not one record a free */
    CHECK(count_kind(&sealed, TF_EV_PY_FREE) == 0);
    CHECK(tf_chunk_write(file.fd, &sealed, NULL, 1) == 0);
    /* The seal ended the run: the next free opens a record in the new
     * frame, whose FRAME names the last free's seq. */
    tf_writer_mark m = tf_writer_get_mark(w);
    CHECK(m.seq == seq);
    tf_event after_seal = a_free(++seq, 0x1000);
    put_free(w, &after_seal, 9000);
    CHECK(after_seal.t_ns == 9000);
    want[n++] = after_seal;

    /* What may not join starts another record: another thread, another
     * parent, another domain, a stack, a gap in seqs. */
    tf_event other_tid = a_free(++seq, 0x2000);
    other_tid.tid = 42;
    put_free(w, &other_tid, 9100);
    CHECK(other_tid.t_ns == 9100);
    want[n++] = other_tid;
    tf_event other_parent = a_free(++seq, 0x3000);
    other_parent.tid = 42;
    other_parent.parent = 9;
    put_free(w, &other_parent, 9200);
    CHECK(other_parent.t_ns == 9200);
    want[n++] = other_parent;
    tf_event other_domain = a_free(++seq, 0x4000);
    other_domain.tid = 42;
    other_domain.parent = 9;
    other_domain.u.host.domain = 0;
    put_free(w, &other_domain, 9300);
    CHECK(other_domain.t_ns == 9300);
    want[n++] = other_domain;
    tf_event stacked = other_domain;
    stacked.seq = ++seq;
    stacked.py_stack = 5;
    put_free(w, &stacked, 9400);
    CHECK(stacked.t_ns == 9400);
    want[n++] = stacked;
    tf_event joins = stacked;
    joins.seq = ++seq;
    joins.u.host.ptr = 0x4100;
    put_free(w, &joins, 9999);
    CHECK(joins.t_ns == 9400);                  /* joined: the record's time */
    want[n++] = joins;
    seq += 5;                                   /* dropped events */
    tf_event after_gap = joins;
    after_gap.seq = seq;
    put_free(w, &after_gap, 9500);
    CHECK(after_gap.t_ns == 9500);
    want[n] = after_gap;
    want[n++].flags = TF_EVENT_AFTER_GAP;   /* the reader flags the event after the gap */

    /* Another event ends the run; the one after it writes its seq as a gap
     * from the run's first free, and frees after it open a new record. */
    tf_event mark = { .kind = TF_EV_MARK, .seq = ++seq, .tid = 41, .t_ns = 9600 };
    tf_write_event(w, &mark);
    want[n++] = mark;
    tf_event late = a_free(++seq, 0x5000);
    put_free(w, &late, 9700);
    CHECK(late.t_ns == 9700);
    want[n++] = late;
    tf_event stop = { .kind = TF_EV_GC_STOP, .seq = ++seq, .tid = 41, .t_ns = 9800 };
    tf_write_event(w, &stop);
    want[n++] = stop;
    tf_event end = { .kind = TF_EV_END, .seq = ++seq, .tid = 41, .t_ns = 9900 };
    tf_write_event(w, &end);

    /* The raw records of this last frame, read as a 2.2 reader does: it
     * knows no PY_FREES, decodes its common fields and skips the rest, and
     * still gets every other event's seq right. */
    tf_writer_seal(w, &sealed);
    {
        tf_bases b = { 0 };
        tf_cursor cur = { sealed.data, sealed.data + sealed.len, 0 };
        uint64_t seen_mark = 0, seen_stop = 0, seen_end = 0;
        while (cur.p < cur.end && !cur.bad) {
            uint64_t kind = tf_get_uv(&cur), len;
            const uint8_t *p = tf_get_bytes(&cur, &len);
            tf_cursor pc = { p, p + len, 0 };
            if (kind == TF_REC_FRAME) {
                tf_get_uv(&pc);
                uint64_t s = tf_get_uv(&pc), t = tf_get_uv(&pc);
                CHECK(s == m.seq);
                tf_bases_frame(&b, s, t);
                continue;
            }
            if (kind < 32)
                continue;
            tf_event e;
            int rc = tf_get_event(&b, (uint32_t)kind, &pc, &e);
            CHECK(rc >= 0);
            CHECK(kind == TF_EV_PY_FREES ? rc == 0 : rc == 1);
            if (rc == 1 && e.kind == TF_EV_MARK)
                seen_mark = e.seq;
            if (rc == 1 && e.kind == TF_EV_GC_STOP)
                seen_stop = e.seq;
            if (rc == 1 && e.kind == TF_EV_END)
                seen_end = e.seq;
        }
        CHECK(seen_mark == mark.seq && seen_stop == stop.seq && seen_end == end.seq);
    }
    CHECK(tf_chunk_write(file.fd, &sealed, NULL, 1) == 0);

    /* The reader returns every free, one by one, as it was given. */
    tf_writer_free(w);
    tf_chunk_free(&sealed);
    tf_chunk_free(&chunk);
    char err[256];
    tf_reader *r = tf_reader_open(file.path, err, sizeof err);
    CHECK(r != NULL);
    if (!r)
        return tf_test_done("py_frees");
    tf_event got;
    for (int i = 0; i < n; i++) {
        CHECK(tf_reader_next(r, &got) == 1);
        CHECK(memcmp(&got, &want[i], sizeof got) == 0);
    }
    CHECK(tf_reader_next(r, &got) == 1 && got.kind == TF_EV_END && got.seq == end.seq);
    CHECK(got.u.end.events == (uint64_t)n);
    CHECK(tf_reader_next(r, &got) == 0);
    const tf_read_status *st = tf_reader_status(r);
    CHECK(st->clean_end && st->corrupt_frames == 0 && st->events == (uint64_t)n + 1);
    CHECK(tf_reader_damage(r) == NULL);
    tf_reader_close(r);

    /* Damage: an address cut in the middle, a presence bit past `domain`. */
    static const uint8_t cut[] = { TF_EV_PY_FREES, 5, 0x40, 0, 3, 0x10, 0x80 };
    static const uint8_t extra_bit[] = { TF_EV_PY_FREES, 4, 0xc0, 0, 3, 0x10 };
    const uint8_t *bad[] = { cut, extra_bit };
    size_t bad_len[] = { sizeof cut, sizeof extra_bit };
    for (int k = 0; k < 2; k++) {
        tf_test_file f2 = tf_test_file_new();
        tf_writer *w2 = tf_writer_new(&header);
        tf_event first = a_free(1, 0x10);
        put_free(w2, &first, 100);
        tf_test_flush_with(w2, f2.fd, &chunk, bad[k], bad_len[k]);
        tf_event next = { .kind = TF_EV_MARK, .seq = 9, .tid = 41, .t_ns = 200 };
        tf_write_event(w2, &next);
        tf_reader *r2 = tf_test_close_and_read(w2, &f2, &chunk);
        if (!r2)
            continue;
        CHECK(tf_reader_next(r2, &got) == 1 && got.kind == TF_EV_PY_FREE && got.seq == 1);
        /* the damaged record's frame is dropped from there; the next frame reads */
        int rc = tf_reader_next(r2, &got);
        if (rc == 1 && got.kind == TF_EV_PY_FREE)   /* a cut record may yield its first free */
            rc = tf_reader_next(r2, &got);
        CHECK(rc == 1 && got.kind == TF_EV_MARK && got.seq == 9);
        CHECK(tf_reader_status(r2)->corrupt_frames == 1);
        tf_reader_close(r2);
    }
    return tf_test_done("py_frees");
}
