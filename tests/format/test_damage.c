/*
 * test_damage.c - the reader on damaged logs: cut at every byte, a bit
 * flipped anywhere in any frame, frames cut out or read twice, records of
 * kinds it does not know, another
 * major version, and files that are not logs.
 */
#include "tf_test.h"

#define FRAMES 5
#define PER_FRAME 40
#define EVENTS (FRAMES * PER_FRAME)

typedef struct log {
    uint8_t *data;
    size_t len;
    size_t frame_off[FRAMES + 1];  /* where each frame starts; [FRAMES] = end */
    tf_event ev[EVENTS + 1];       /* what was written, END last */
} log;

/* A small log: FRAMES frames of PER_FRAME events, the last ending with END. */
static void make_log(log *lg)
{
    tf_test_file f = tf_test_file_new();
    tf_header h = { .pid = 1, .cmdline = "damage" };
    tf_writer *w = tf_writer_new(&h);
    tf_chunk chunk = { 0 };
    uint64_t s = 42;
    uint64_t stack[4] = { 0x401000, 0x401100, 0x7f0000001000, 0x7f0000002000 };
    tf_write_native_stack(w, stack, 4);
    tf_write_string(w, "hello", 5);
    for (int i = 0; i < EVENTS; i++) {
        tf_test_random_event(&s, (uint64_t)i + 1, &lg->ev[i]);
        tf_write_event(w, &lg->ev[i]);
        if (i % PER_FRAME == PER_FRAME - 1 && i != EVENTS - 1) {
            lg->frame_off[i / PER_FRAME] = (size_t)lseek(f.fd, 0, SEEK_CUR);
            tf_test_flush(w, f.fd, &chunk);
        }
    }
    tf_event end = { .kind = TF_EV_END, .seq = EVENTS + 1 };
    tf_write_event(w, &end);
    lg->frame_off[FRAMES - 1] = (size_t)lseek(f.fd, 0, SEEK_CUR);
    tf_test_flush(w, f.fd, &chunk);
    tf_writer_free(w);
    tf_chunk_free(&chunk);
    lg->data = tf_test_slurp(f.fd, &lg->len);
    lg->frame_off[FRAMES] = lg->len;
    close(f.fd);
}

/* Reads everything; checks each event is the one written with its seq;
 * returns the number read. */
static uint64_t read_all(const uint8_t *data, size_t len, tf_reader **out, const log *lg)
{
    char err[256];
    tf_reader *r = tf_reader_open_mem(data, len, err, sizeof err);
    *out = r;
    if (!r)
        return 0;
    tf_event e;
    uint64_t n = 0, prev = 0;
    while (tf_reader_next(r, &e)) {
        n++;
        /* flagged as coming after a gap exactly where events are missing */
        CHECK(!(e.flags & TF_EVENT_AFTER_GAP) == (e.seq == prev + 1));
        prev = e.seq;
        e.flags &= ~TF_EVENT_AFTER_GAP;
        if (e.kind == TF_EV_END)
            continue;
        CHECK(e.seq >= 1 && e.seq <= EVENTS);
        if (e.seq >= 1 && e.seq <= EVENTS)
            CHECK(memcmp(&e, &lg->ev[e.seq - 1], sizeof e) == 0);
    }
    return n;
}

static void test_truncation(const log *lg)
{
    uint64_t prev = 0;
    for (size_t cut = 0; cut <= lg->len; cut++) {
        tf_reader *r;
        uint64_t n = read_all(lg->data, cut, &r, lg);
        CHECK(n >= prev);
        prev = n;
        if (!r)
            continue;
        const tf_read_status *st = tf_reader_status(r);
        CHECK(st->events == n && st->corrupt_frames == 0);
        const char *damage = tf_reader_damage(r);
        if (cut < lg->len) {
            char want[64];
            snprintf(want, sizeof want, "after event %llu", (unsigned long long)st->last_seq);
            CHECK(damage && strstr(damage, want));
            CHECK(st->clean_end == (n == EVENTS + 1));  /* END may precede the cut */
        } else {
            CHECK(damage == NULL && st->clean_end && n == EVENTS + 1);
        }
        tf_reader_close(r);
    }
    CHECK(prev == EVENTS + 1);
}

static int frame_of(const log *lg, size_t off)
{
    int k = 0;
    while (k + 1 < FRAMES && lg->frame_off[k + 1] <= off)
        k++;
    return k;
}

/* Every bit of every frame: the flip is caught, or it changed nothing; the
 * other frames' events always come back, and nothing wrong ever does. */
static void test_bit_flips(const log *lg)
{
    uint8_t *copy = malloc(lg->len);
    uint64_t caught = 0, flips = 0;
    for (size_t off = 0; off < lg->len; off++) {
        int k = frame_of(lg, off);
        for (int bit = 0; bit < 8; bit++) {
            memcpy(copy, lg->data, lg->len);
            copy[off] ^= (uint8_t)(1u << bit);
            tf_reader *r;
            uint64_t n = read_all(copy, lg->len, &r, lg);
            flips++;
            /* without its leading magic the file is not recognisably a log */
            CHECK(r != NULL || off < 4);
            if (!r)
                continue;
            /* A flip in the last frame's block sizes can look exactly like
             * a file cut short: then it is reported as truncation. */
            if (tf_reader_damage(r)) {
                caught++;
                uint64_t lost = PER_FRAME + (k == FRAMES - 1);  /* END is in the last */
                CHECK(n + lost >= EVENTS + 1);
            } else {
                CHECK(n == EVENTS + 1);
            }
            tf_reader_close(r);
        }
        /* a flip inside a frame's compressed body is always caught */
        if (off == (lg->frame_off[k] + lg->frame_off[k + 1]) / 2) {
            memcpy(copy, lg->data, lg->len);
            copy[off] ^= 0x10;
            tf_reader *r;
            read_all(copy, lg->len, &r, lg);
            CHECK(r && tf_reader_status(r)->corrupt_frames == 1);
            char want[32];
            snprintf(want, sizeof want, "frame %d corrupt", k);
            CHECK(r && tf_reader_damage(r) && strstr(tf_reader_damage(r), want));
            tf_reader_close(r);
        }
    }
    printf("bit flips: %llu of %llu caught, the rest changed nothing\n",
           (unsigned long long)caught, (unsigned long long)flips);
    free(copy);
}

/* A newer minor version's records: a definition kind 20 and an event kind 52
 * (which still takes a seq) are skipped; everything else reads on.  (Kind 51
 * was this test's unknown event until 2.8 defined it: PY_ALLOCS_SPLIT.) */
static void test_unknown_kinds(void)
{
    tf_test_file f = tf_test_file_new();
    tf_header h = { 0 };
    tf_writer *w = tf_writer_new(&h);
    tf_chunk chunk = { 0 };
    tf_event e = { .kind = TF_EV_MARK, .seq = 1, .t_ns = 100 };
    tf_write_event(w, &e);
    /* kind 20, 3 bytes; kind 52: presence 0x0044 (time delta, field 0),
     * time +5 (zigzag 10), field 0 = 9, and a trailing byte it may carry */
    static const uint8_t extra[] = { 20, 3, 'x', 'y', 'z', 52, 5, 0x44, 0x00, 10, 9, 0xff };
    tf_test_flush_with(w, f.fd, &chunk, extra, sizeof extra);
    e.seq = 3;
    e.t_ns = 110;
    tf_write_event(w, &e);
    tf_reader *r = tf_test_close_and_read(w, &f, &chunk);
    if (!r)
        return;
    tf_event got;
    CHECK(tf_reader_next(r, &got) && got.seq == 1 && got.t_ns == 100);
    CHECK(tf_reader_next(r, &got) && got.seq == 3 && got.t_ns == 110 && got.kind == TF_EV_MARK);
    CHECK(tf_reader_status(r)->corrupt_frames == 0 && !tf_reader_damage(r));
    tf_reader_close(r);
}

/* The HEADER's major version byte sits right after kind, length and magic. */
static void test_version(void)
{
    tf_header h = { 0 };
    tf_writer *w = tf_writer_new(&h);
    tf_chunk chunk = { 0 };
    tf_writer_seal(w, &chunk);
    CHECK(chunk.len > 11 && chunk.data[0] == TF_REC_HEADER &&
          memcmp(chunk.data + 2, "gputrace", 8) == 0 && chunk.data[10] == TF_VERSION_MAJOR);
    /* 1.x: read (2.0 only added column blocks) */
    chunk.data[10] = 1;
    tf_test_file f = tf_test_file_new();
    CHECK(tf_chunk_write(f.fd, &chunk, NULL, 1) == 0);
    char err[256] = "";
    tf_reader *r = tf_reader_open(f.path, err, sizeof err);
    CHECK(r != NULL && tf_reader_header(r)->version_major == 1);
    if (r)
        tf_reader_close(r);
    /* a later major: refused, saying which */
    chunk.data[10] = TF_VERSION_MAJOR + 1;
    tf_test_file g = tf_test_file_new();
    CHECK(tf_chunk_write(g.fd, &chunk, NULL, 1) == 0);
    tf_writer_free(w);
    tf_chunk_free(&chunk);
    CHECK(tf_reader_open(g.path, err, sizeof err) == NULL);
    char want[96];
    snprintf(want, sizeof want, "log format version %d.%d; this reader understands 1.x and %d.x",
             TF_VERSION_MAJOR + 1, TF_VERSION_MINOR, TF_VERSION_MAJOR);
    CHECK(strcmp(err, want) == 0);
    printf("version %d refused: %s\n", TF_VERSION_MAJOR + 1, err);
    close(f.fd);
    close(g.fd);
}

/* A zstd skippable frame between two frames is stepped over, not damage. */
static void test_skippable(const log *lg)
{
    static const uint8_t skip[] = { 0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 'x', 'y', 'z' };
    size_t at = lg->frame_off[2];
    uint8_t *copy = malloc(lg->len + sizeof skip);
    memcpy(copy, lg->data, at);
    memcpy(copy + at, skip, sizeof skip);
    memcpy(copy + at + sizeof skip, lg->data + at, lg->len - at);
    tf_reader *r;
    CHECK(read_all(copy, lg->len + sizeof skip, &r, lg) == EVENTS + 1);
    CHECK(r && tf_reader_damage(r) == NULL && tf_reader_status(r)->frames == FRAMES);
    tf_reader_close(r);
    free(copy);
}

/* The file with frames [from, to) replaced by the frames `with` names
 * (-1: none). */
static uint8_t *splice(const log *lg, int from, int to, int with, size_t *len)
{
    size_t wlen = with >= 0 ? lg->frame_off[with + 1] - lg->frame_off[with] : 0;
    size_t cut = lg->frame_off[to] - lg->frame_off[from];
    uint8_t *copy = malloc(lg->len + wlen);
    memcpy(copy, lg->data, lg->frame_off[from]);
    if (wlen)
        memcpy(copy + lg->frame_off[from], lg->data + lg->frame_off[with], wlen);
    memcpy(copy + lg->frame_off[from] + wlen, lg->data + lg->frame_off[to], lg->len - lg->frame_off[to]);
    *len = lg->len - cut + wlen;
    return copy;
}

/* A frame lost whole (as one overwritten at an exec was): every frame left
 * is whole, so only the seqs show the hole.  It is damage, said as such, and
 * the event after it comes after a gap; so is a frame read twice (seqs go
 * back).  Before, both read as a whole log. */
static void test_missing_frames(const log *lg)
{
    for (int k = 1; k < FRAMES - 1; k++) {
        size_t len;
        uint8_t *copy = splice(lg, k, k + 1, -1, &len);
        tf_reader *r;
        CHECK(read_all(copy, len, &r, lg) == EVENTS + 1 - PER_FRAME);
        const tf_read_status *st = r ? tf_reader_status(r) : NULL;
        const char *damage = r ? tf_reader_damage(r) : NULL;
        char want[96];
        snprintf(want, sizeof want, "events %d to %d missing (a gap in seq before frame %d)", k * PER_FRAME + 1,
                 (k + 1) * PER_FRAME, k);
        CHECK(damage && strcmp(damage, want) == 0);
        CHECK(st && st->clean_end && st->corrupt_frames == 0 && st->seq_gaps == 1 &&
              st->missing_events == PER_FRAME && st->gaps == 0);
        if (k == 1)
            printf("frame %d cut out: %s\n", k, damage ? damage : "(no damage)");
        tf_reader_close(r);
        free(copy);
    }
    /* two frames cut out, apart: two notes */
    {
        size_t len1, len;
        uint8_t *one = splice(lg, 3, 4, -1, &len1);
        log cut = *lg;
        cut.data = one;
        cut.len = len1;
        uint8_t *copy = splice(&cut, 1, 2, -1, &len);
        tf_reader *r;
        CHECK(read_all(copy, len, &r, lg) == EVENTS + 1 - 2 * PER_FRAME);
        CHECK(r && tf_reader_status(r)->seq_gaps == 2 && tf_reader_status(r)->missing_events == 2 * PER_FRAME);
        CHECK(r && tf_reader_damage(r) && strstr(tf_reader_damage(r), "; events 121 to 160 missing (a gap in seq before frame 2)"));
        tf_reader_close(r);
        free(copy);
        free(one);
    }
    /* frame 1 again after frame 2 */
    {
        size_t len;
        uint8_t *copy = splice(lg, 3, 3, 1, &len);
        tf_reader *r;
        CHECK(read_all(copy, len, &r, lg) == EVENTS + 1 + PER_FRAME);
        CHECK(r && tf_reader_damage(r) && strcmp(tf_reader_damage(r), "frame 3 goes back to event 41 after event 120 (seqs go back); "
                                    "events 81 to 120 missing (a gap in seq before frame 4)") == 0);
        CHECK(r && tf_reader_status(r)->seq_gaps == 2);   /* back to 41, then on from 80 to 121 */
        tf_reader_close(r);
        free(copy);
    }
    /* the whole log: no damage (test_truncation's last cut checks it too) */
    tf_reader *r;
    CHECK(read_all(lg->data, lg->len, &r, lg) == EVENTS + 1);
    CHECK(r && !tf_reader_damage(r) && tf_reader_status(r)->seq_gaps == 0);
    tf_reader_close(r);
}

static void test_not_logs(void)
{
    char err[256];
    CHECK(tf_reader_open_mem("", 0, err, sizeof err) == NULL);
    CHECK(tf_reader_open_mem("hello world, not zstd", 21, err, sizeof err) == NULL);
    CHECK(strstr(err, "not a trace log") != NULL);
    CHECK(tf_reader_open("/nonexistent/log", err, sizeof err) == NULL);
    CHECK(strstr(err, "No such file") != NULL);
    /* a zstd file that is not ours */
    tf_chunk c = { (uint8_t *)"just some text", 14, 14 };
    tf_test_file f = tf_test_file_new();
    CHECK(tf_chunk_write(f.fd, &c, NULL, 1) == 0);
    CHECK(tf_reader_open(f.path, err, sizeof err) == NULL);
    CHECK(strstr(err, "not a trace log") != NULL);
}

int main(void)
{
    static log lg;
    make_log(&lg);
    test_truncation(&lg);
    test_bit_flips(&lg);
    test_skippable(&lg);
    test_missing_frames(&lg);
    test_unknown_kinds();
    test_version();
    test_not_logs();
    free(lg.data);
    return tf_test_done("damage");
}
