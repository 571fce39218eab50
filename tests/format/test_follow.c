/*
 * test_follow.c - reading a log while it is written, and logs cut into
 * segment files (FORMAT.md section 13).
 *
 *  - follow: frames appear one by one, some in two halves (a reader that
 *    looks while the writer is in the middle of a write): every event
 *    arrives once, in order, nothing is reported cut short while the
 *    writer may go on, and the end after tf_reader_final reads as usual
 *    (END, or a frame cut short and said so);
 *  - segments: a writer's restatement opens each segment; the first
 *    segment and the newest ones kept, the ones between deleted: the log
 *    reads as one from any of its files, with a note saying which events
 *    were deleted; the process's state (pools, modules, INFO) defined only
 *    in deleted segments is restated, and each segment defines the strings
 *    its events use (under ids never used for anything else); each segment
 *    also reads alone;
 *  - follow across segments, including one deleted before the reader got
 *    to it;
 *  - files named as segments of a log that are another run's;
 *  - the segment names.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <zstd.h>

#include "tf_test.h"

static char dir[64];

static void path_of(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

static void append(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0600);
    CHECK(fd >= 0 && write(fd, data, len) == (ssize_t)len);
    close(fd);
}

/* One sealed chunk as the bytes of one frame. */
static uint8_t *frame_bytes(tf_writer *w, tf_chunk *chunk, size_t *len)
{
    tf_writer_seal(w, chunk);
    size_t cap = tf_chunk_bound(chunk);
    uint8_t *out = malloc(cap);
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    *len = tf_chunk_compress(chunk, cctx, 1, out, cap);
    ZSTD_freeCCtx(cctx);
    CHECK(*len > 0);
    return out;
}

static tf_event mark_event(uint64_t seq, uint32_t text)
{
    tf_event e;
    memset(&e, 0, sizeof e);
    e.kind = TF_EV_MARK;
    e.seq = seq;
    e.tid = 7;
    e.t_ns = seq * 10;
    e.u.mark.text = text;
    return e;
}

/* Reads what is there; returns how many events came, checking seqs follow
 * *next. */
static int drain(tf_reader *r, uint64_t *next)
{
    tf_event e;
    int n = 0;
    while (tf_reader_next(r, &e)) {
        CHECK(e.seq == *next);
        *next = e.seq + 1;
        n++;
    }
    return n;
}

static void test_follow(void)
{
    char path[128];
    path_of(path, sizeof path, "follow.tlog");
    int again = 0;
    char err[256];
    CHECK(!tf_reader_open_follow(path, &again, err, sizeof err) && again);   /* not there yet */

    tf_header h = { .pid = 4242, .wall_start_ns = 99, .cmdline = "follow" };
    tf_writer *w = tf_writer_new(&h);
    tf_chunk chunk = { 0 };
    size_t len;
    uint8_t *f = frame_bytes(w, &chunk, &len);   /* the HEADER alone */
    append(path, f, len / 2);
    CHECK(!tf_reader_open_follow(path, &again, err, sizeof err) && again);   /* half a frame */
    append(path, f + len / 2, len - len / 2);
    free(f);
    tf_reader *r = tf_reader_open_follow(path, &again, err, sizeof err);
    CHECK(r != NULL);
    if (!r)
        return;
    CHECK(tf_reader_header(r)->pid == 4242);
    uint64_t next = 1, seq = 0;
    CHECK(drain(r, &next) == 0 && tf_reader_status(r)->waiting);
    uint32_t hello = tf_write_string(w, "hello", 5);
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 50; i++) {
            tf_event e = mark_event(++seq, hello);
            tf_write_event(w, &e);
        }
        f = frame_bytes(w, &chunk, &len);
        if (round % 3 == 1) {   /* the reader looks in the middle of a write */
            append(path, f, len - 7);
            CHECK(drain(r, &next) == 0 && tf_reader_status(r)->waiting);
            append(path, f + len - 7, 7);
        } else {
            append(path, f, len);
        }
        free(f);
        CHECK(drain(r, &next) == 50 && tf_reader_status(r)->waiting);
        CHECK(tf_reader_damage(r) == NULL);
    }
    size_t slen;
    const char *s = tf_reader_string(r, hello, &slen);
    CHECK(s && slen == 5 && !memcmp(s, "hello", 5));
    /* The writer dies in the middle of a frame: only then is it cut short. */
    for (int i = 0; i < 30; i++) {
        tf_event e = mark_event(++seq, hello);
        tf_write_event(w, &e);
    }
    f = frame_bytes(w, &chunk, &len);
    append(path, f, len - 3);
    free(f);
    CHECK(drain(r, &next) == 0 && tf_reader_status(r)->waiting);
    tf_reader_final(r);
    int tail = drain(r, &next);
    CHECK(tail > 0 && tail <= 30);
    CHECK(!tf_reader_status(r)->waiting && !tf_reader_status(r)->clean_end);
    CHECK(tf_reader_status(r)->truncated);
    CHECK(tf_reader_damage(r) && strstr(tf_reader_damage(r), "truncated after event"));
    tf_reader_close(r);

    /* A log that ends with END ends the follow by itself. */
    path_of(path, sizeof path, "follow_end.tlog");
    tf_writer *w2 = tf_writer_new(&h);
    f = frame_bytes(w2, &chunk, &len);
    append(path, f, len);
    free(f);
    r = tf_reader_open_follow(path, &again, err, sizeof err);
    CHECK(r != NULL);
    tf_event e = mark_event(1, 0);
    tf_write_event(w2, &e);
    tf_event end = { .kind = TF_EV_END, .seq = 2 };
    tf_write_event(w2, &end);
    f = frame_bytes(w2, &chunk, &len);
    append(path, f, len);
    free(f);
    next = 1;
    if (r) {
        CHECK(drain(r, &next) == 2);
        CHECK(tf_reader_status(r)->clean_end && !tf_reader_status(r)->waiting && !tf_reader_damage(r));
        tf_reader_close(r);
    }
    tf_writer_free(w2);
    tf_writer_free(w);
    tf_chunk_free(&chunk);

    /* Not a log: refused at once, not waited for. */
    path_of(path, sizeof path, "notalog.tlog");
    append(path, "hello world", 11);
    again = 0;
    CHECK(!tf_reader_open_follow(path, &again, err, sizeof err) && !again);
}

/* A writer that rotates: segment k's file gets the restatement, then the
 * frames.  Segment k holds events [first[k], first[k+1]). */
#define SEGMENTS 8
#define PER_SEGMENT 3   /* frames */
#define PER_FRAME 40

typedef struct seglog {
    char path[128];
    uint64_t first[SEGMENTS + 1];
    uint32_t names[SEGMENTS];   /* the id "common" had in each segment */
} seglog;

/* follow: 0 none; 1 a reader that reads after every frame; 2 one that
 * reads segment 0 and then only at the end (segments are deleted under
 * it).  It is opened once the first frame is there; *out gets it. */
static void write_segments(seglog *lg, int follow, tf_reader **out, uint64_t *next)
{
    tf_reader *follower = NULL;
    int again;
    char err[256];
    path_of(lg->path, sizeof lg->path, "seg.tlog");
    tf_header h = { .pid = 77, .wall_start_ns = 5, .cmdline = "segments", .max_bytes = 1 << 20 };
    tf_writer *w = tf_writer_new(&h);
    tf_chunk chunk = { 0 }, restated = { 0 };
    uint64_t seq = 0;
    size_t len;
    tf_write_pool(w, 3, "the pool");
    tf_write_info(w, "key", "value");
    tf_segment ms = { 0, 0x1000, 5 };
    tf_write_module_load(w, "/lib/mod.so", 0x400000, (const uint8_t *)"\x01\x02", 2, &ms, 1);
    uint8_t *f = frame_bytes(w, &chunk, &len);
    append(lg->path, f, len);
    free(f);
    if (follow) {
        follower = tf_reader_open_follow(lg->path, &again, err, sizeof err);
        CHECK(follower != NULL);
        *out = follower;
    }
    for (uint32_t k = 0; k < SEGMENTS; k++) {
        char seg[160];
        CHECK(tf_segment_path(seg, sizeof seg, lg->path, k) == 0);
        if (k) {
            CHECK(tf_writer_restate(w, k, &restated) == 0);
            size_t cap = tf_chunk_bound(&restated);
            uint8_t *out = malloc(cap);
            ZSTD_CCtx *cctx = ZSTD_createCCtx();
            len = tf_chunk_compress(&restated, cctx, 1, out, cap);
            ZSTD_freeCCtx(cctx);
            append(seg, out, len);
            free(out);
        }
        lg->first[k] = seq + 1;
        char name[32];
        snprintf(name, sizeof name, "name of segment %u", k);
        for (int fr = 0; fr < PER_SEGMENT; fr++) {
            for (int i = 0; i < PER_FRAME; i++) {
                /* Interned at each use, as the recorder does: the same id
                 * within a segment, a new one in the next. */
                uint32_t text = i % 2 ? tf_write_string(w, name, strlen(name)) : tf_write_string(w, "common", 6);
                if (i == 0)
                    lg->names[k] = text;
                tf_event e = mark_event(++seq, text);
                tf_write_event(w, &e);
            }
            if (k == SEGMENTS - 1 && fr == PER_SEGMENT - 1) {
                tf_event end = { .kind = TF_EV_END, .seq = ++seq };
                tf_write_event(w, &end);
            }
            f = frame_bytes(w, &chunk, &len);
            append(seg, f, len);
            free(f);
            if (follower && (follow == 1 || k == 0)) {
                drain(follower, next);
                if (k < SEGMENTS - 1 || fr < PER_SEGMENT - 1)
                    CHECK(tf_reader_status(follower)->waiting);
            }
        }
        /* Keep segment 0 and the two newest: delete the one three back. */
        if (k >= 3) {
            char old[160];
            tf_segment_path(old, sizeof old, lg->path, k - 2);
            if (k - 2 >= 1)
                CHECK(unlink(old) == 0);
        }
    }
    lg->first[SEGMENTS] = seq + 1;
    CHECK(tf_writer_restate(w, SEGMENTS, &restated) == 0);
    tf_event e = mark_event(++seq, 0);
    tf_write_event(w, &e);
    CHECK(tf_writer_restate(w, SEGMENTS, &restated) < 0);   /* not right after a seal */
    tf_writer_free(w);
    tf_chunk_free(&chunk);
    tf_chunk_free(&restated);
}

static void check_whole(const seglog *lg, const char *open_path)
{
    char err[256];
    tf_reader *r = tf_reader_open(open_path, err, sizeof err);
    CHECK(r != NULL);
    if (!r) {
        fprintf(stderr, "%s: %s\n", open_path, err);
        return;
    }
    CHECK(tf_reader_header(r)->segment == 0 && tf_reader_header(r)->max_bytes == 1 << 20);
    tf_event e;
    uint64_t expect = 1, events = 0;
    while (tf_reader_next(r, &e)) {
        if (expect == lg->first[1])   /* end of segment 0 */
            expect = lg->first[SEGMENTS - 2];
        CHECK(e.seq == expect);
        /* The first event after the deleted segments says so; no other. */
        CHECK(!!(e.flags & TF_EVENT_AFTER_GAP) == (e.seq == lg->first[SEGMENTS - 2]));
        expect++;
        events++;
        if (e.kind == TF_EV_MARK) {
            size_t n;
            const char *s = tf_reader_string(r, e.u.mark.text, &n);
            CHECK(s && (!strcmp(s, "common") || !strncmp(s, "name of segment", 15)));
        }
    }
    const tf_read_status *st = tf_reader_status(r);
    CHECK(st->clean_end && st->gaps == 1 && st->gap_seq == lg->first[SEGMENTS - 2]);
    CHECK(st->lost_events == lg->first[SEGMENTS - 2] - lg->first[1]);
    CHECK(events == (lg->first[1] - 1) + (lg->first[SEGMENTS] - lg->first[SEGMENTS - 2]));
    const char *d = tf_reader_damage(r);
    CHECK(d && strstr(d, "were deleted with segments 1 to 5"));
    /* The state defined in segment 0 is known; "common" had a new id in
     * each segment, and the ids of deleted segments resolve to nothing. */
    CHECK(tf_reader_pool_name(r, 3) && !strcmp(tf_reader_pool_name(r, 3), "the pool"));
    CHECK(tf_reader_info_count(r) == 1 && tf_reader_module_count(r) == 1);   /* not taken twice */
    for (uint32_t k = 0; k < SEGMENTS; k++) {
        CHECK(k == 0 || lg->names[k] > lg->names[k - 1]);
        size_t n;
        const char *s = tf_reader_string(r, lg->names[k], &n);
        if (k == 0 || k >= SEGMENTS - 2)
            CHECK(s && !strcmp(s, "common"));
        else
            CHECK(s == NULL);
    }
    tf_reader_close(r);
}

static void test_segments(void)
{
    seglog lg;
    write_segments(&lg, 0, NULL, NULL);
    check_whole(&lg, lg.path);
    char seg[160];
    tf_segment_path(seg, sizeof seg, lg.path, SEGMENTS - 1);
    check_whole(&lg, seg);   /* from a later segment: read from the first */

    /* A segment alone (copied elsewhere): it reads, and says it is cut. */
    char copy[128];
    path_of(copy, sizeof copy, "copy.tlog");
    int in = open(seg, O_RDONLY), out = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        CHECK(write(out, buf, (size_t)n) == n);
    close(in);
    close(out);
    char err[256];
    tf_reader *r = tf_reader_open(copy, err, sizeof err);
    CHECK(r != NULL);
    if (r) {
        CHECK(tf_reader_header(r)->segment == SEGMENTS - 1);
        tf_event e;
        uint64_t expect = lg.first[SEGMENTS - 1];
        while (tf_reader_next(r, &e)) {
            CHECK(!!(e.flags & TF_EVENT_AFTER_GAP) == (e.seq == lg.first[SEGMENTS - 1]));
            CHECK(e.seq == expect++);
        }
        CHECK(expect == lg.first[SEGMENTS]);
        const char *d = tf_reader_damage(r);
        CHECK(d && strstr(d, "the log starts at event"));
        CHECK(tf_reader_status(r)->gaps == 1 && tf_reader_status(r)->lost_events == lg.first[SEGMENTS - 1] - 1);
        size_t len;
        CHECK(tf_reader_string(r, lg.names[0], &len) == NULL);
        CHECK(tf_reader_string(r, lg.names[SEGMENTS - 1], &len) != NULL);
        CHECK(tf_reader_pool_name(r, 3) && tf_reader_info_count(r) == 1 && tf_reader_module_count(r) == 1);
        tf_reader_close(r);
    }
    /* Any segment read by a 1.x reader on its own: a log of its own. */
    tf_segment_path(seg, sizeof seg, lg.path, SEGMENTS - 2);
    int fd = open(seg, O_RDONLY);
    size_t len;
    uint8_t *data = tf_test_slurp(fd, &len);
    close(fd);
    r = tf_reader_open_mem(data, len, err, sizeof err);
    CHECK(r && tf_reader_header(r)->segment == SEGMENTS - 2);
    if (r) {
        tf_event e;
        uint64_t expect = lg.first[SEGMENTS - 2];
        while (tf_reader_next(r, &e))
            CHECK(e.seq == expect++);
        CHECK(expect == lg.first[SEGMENTS - 1]);
        tf_reader_close(r);
    }
    free(data);
    for (uint32_t k = 0; k < SEGMENTS; k++) {
        tf_segment_path(seg, sizeof seg, lg.path, k);
        unlink(seg);
    }
    unlink(copy);
}

static void remove_segments(const seglog *lg)
{
    char seg[160];
    for (uint32_t k = 0; k <= SEGMENTS; k++) {
        tf_segment_path(seg, sizeof seg, lg->path, k);
        unlink(seg);
    }
}

static void test_follow_segments(void)
{
    /* A reader that keeps up: every event, across every segment, no gap. */
    seglog lg;
    tf_reader *r = NULL;
    uint64_t next = 1;
    write_segments(&lg, 1, &r, &next);
    if (r) {
        drain(r, &next);
        const tf_read_status *st = tf_reader_status(r);
        CHECK(next == lg.first[SEGMENTS]);
        CHECK(st->clean_end && !st->waiting && st->gaps == 0 && st->segment == SEGMENTS - 1);
        CHECK(tf_reader_damage(r) == NULL);
        tf_reader_close(r);
    }
    remove_segments(&lg);

    /* A reader that falls behind: segments 1 to 5 are deleted before it
     * gets to them.  It says so and goes on with what is left. */
    r = NULL;
    next = 1;
    write_segments(&lg, 2, &r, &next);
    if (r) {
        tf_event e;
        uint64_t expect = next;
        /* It was at the end of segment 0, whose file stays; then the first
         * segment still there.  (A live reader lists the directory for it
         * at most once a second; the writer is gone here.) */
        tf_reader_final(r);
        while (tf_reader_next(r, &e)) {
            if (expect == lg.first[1])
                expect = lg.first[SEGMENTS - 2];
            CHECK(e.seq == expect);
            expect++;
        }
        const tf_read_status *st = tf_reader_status(r);
        if (expect != lg.first[SEGMENTS])
            fprintf(stderr, "lagging: stopped at %llu (waiting %d), damage %s\n", (unsigned long long)expect,
                    st->waiting, tf_reader_damage(r));
        CHECK(expect == lg.first[SEGMENTS]);
        CHECK(st->clean_end && st->gaps == 1 && st->gap_seq == lg.first[SEGMENTS - 2]);
        CHECK(tf_reader_damage(r) && strstr(tf_reader_damage(r), "were deleted with segments 1 to 5"));
        tf_reader_close(r);
    }
    remove_segments(&lg);
}

/* Frames of n marks from seq *seq + 1 on (and END after them when end),
 * appended to path. */
static void append_marks(tf_writer *w, const char *path, uint64_t *seq, int n, int end)
{
    tf_chunk chunk = { 0 };
    size_t len;
    for (int i = 0; i < n; i++) {
        tf_event e = mark_event(++*seq, 0);
        tf_write_event(w, &e);
    }
    if (end) {
        tf_event e = { .kind = TF_EV_END, .seq = ++*seq };
        tf_write_event(w, &e);
    }
    uint8_t *f = frame_bytes(w, &chunk, &len);
    append(path, f, len);
    free(f);
    tf_chunk_free(&chunk);
}

/* A log of its own at path: pid, budget, segment number, marks. */
static void write_log(const char *path, uint32_t pid, uint64_t max_bytes, uint32_t segment, int n, int end)
{
    tf_header h = { .pid = pid, .wall_start_ns = pid, .cmdline = "another run", .max_bytes = max_bytes,
                    .segment = segment, .first_seq = segment ? 1000 : 0 };
    tf_writer *w = tf_writer_new(&h);
    uint64_t seq = segment ? 999 : 0;
    append_marks(w, path, &seq, n, end);
    tf_writer_free(w);
}

/* Segment files of another run under a log's name (a run before it whose
 * first file was removed, by a version that then used the name again; a
 * file made after the log started).  A log without a budget has no
 * segments: a follower reads it to its end and waits, where it took its
 * file for complete and stopped at the other file.  A log that ended (END)
 * has nothing after it: it reads whole, without a note.  A budgeted log
 * that did not end still stops at the other run's segment, and says whose
 * it is. */
static void test_other_runs_segments(void)
{
    char path[128], other[160], err[256];
    int again = 0;
    path_of(path, sizeof path, "plain.tlog");
    tf_segment_path(other, sizeof other, path, 1);
    write_log(other, 9, 1 << 20, 1, 5, 0);
    tf_header h = { .pid = 8, .wall_start_ns = 8, .cmdline = "no budget" };
    tf_writer *w = tf_writer_new(&h);
    uint64_t seq = 0, next = 1;
    append_marks(w, path, &seq, 10, 0);
    tf_reader *r = tf_reader_open_follow(path, &again, err, sizeof err);
    CHECK(r != NULL);
    if (r) {
        CHECK(drain(r, &next) == 10 && tf_reader_status(r)->waiting && !tf_reader_damage(r));
        append_marks(w, path, &seq, 10, 1);
        CHECK(drain(r, &next) == 11 && tf_reader_status(r)->clean_end && !tf_reader_damage(r));
        tf_reader_close(r);
    }
    tf_writer_free(w);

    path_of(path, sizeof path, "ended.tlog");
    tf_segment_path(other, sizeof other, path, 1);
    write_log(path, 10, 1 << 20, 0, 10, 1);
    write_log(other, 11, 1 << 20, 1, 5, 0);
    r = tf_reader_open(path, err, sizeof err);
    CHECK(r != NULL);
    if (r) {
        next = 1;
        CHECK(drain(r, &next) == 11 && tf_reader_status(r)->clean_end && !tf_reader_damage(r));
        tf_reader_close(r);
    }

    path_of(path, sizeof path, "cut.tlog");
    tf_segment_path(other, sizeof other, path, 1);
    write_log(path, 12, 1 << 20, 0, 10, 0);
    write_log(other, 13, 1 << 20, 1, 5, 0);
    r = tf_reader_open(path, err, sizeof err);
    CHECK(r != NULL);
    if (r) {
        next = 1;
        CHECK(drain(r, &next) == 10 && !tf_reader_status(r)->clean_end);
        const char *d = tf_reader_damage(r);
        CHECK(d && strstr(d, "segment 1 is not a segment of this log: another run's (pid 13, segment 1; "
                             "this log: pid 12): read no further"));
        tf_reader_close(r);
    }
}

static void test_names(void)
{
    char out[256];
    CHECK(tf_segment_path(out, sizeof out, "/a/trace-12.tlog", 0) == 0 && !strcmp(out, "/a/trace-12.tlog"));
    CHECK(tf_segment_path(out, sizeof out, "/a/trace-12.tlog", 3) == 0 && !strcmp(out, "/a/trace-12.seg3.tlog"));
    CHECK(tf_segment_path(out, sizeof out, "/a.b/trace", 12) == 0 && !strcmp(out, "/a.b/trace.seg12"));
    CHECK(tf_segment_path(out, sizeof out, ".hidden", 1) == 0 && !strcmp(out, ".hidden.seg1"));
    CHECK(tf_segment_path(out, sizeof out, "x.1.tlog", 2) == 0 && !strcmp(out, "x.1.seg2.tlog"));
    CHECK(tf_segment_path(out, 8, "x.1.tlog", 2) < 0);
    CHECK(tf_segment_log_path(out, sizeof out, "/a/trace-12.seg3.tlog", 3) == 0 && !strcmp(out, "/a/trace-12.tlog"));
    CHECK(tf_segment_log_path(out, sizeof out, "/a/trace-12.seg3.tlog", 4) < 0);
    CHECK(tf_segment_log_path(out, sizeof out, "/a.b/trace.seg12", 12) == 0 && !strcmp(out, "/a.b/trace"));
    CHECK(tf_segment_number("trace-12.seg3.tlog", "/a/trace-12.tlog") == 3);
    CHECK(tf_segment_number("trace-12.seg03.tlog", "/a/trace-12.tlog") == 0);
    CHECK(tf_segment_number("trace-12.tlog", "/a/trace-12.tlog") == 0);
    CHECK(tf_segment_number("trace-12.seg3.tlog.ckpt", "/a/trace-12.tlog") == 0);
    CHECK(tf_segment_number("trace-1.seg3.tlog", "/a/trace-12.tlog") == 0);
    CHECK(tf_segment_number("trace.seg7", "trace") == 7);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/tf_follow_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_names();
    test_follow();
    test_segments();
    test_follow_segments();
    test_other_runs_segments();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return tf_test_done("format.follow");
}
