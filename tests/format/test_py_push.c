/*
 * test_py_push.c - Python stacks defined frame by frame (PY_STACK_PUSH,
 * FORMAT.md section 6): a stack that shares its outer frames with one
 * written before costs one record holding the frames it does not share
 * (two or three bytes each), the same frames get the same id however they are
 * named, and a reader gives every stack's whole frame list back, made when
 * first asked for.  A push whose outer stack is unknown defines nothing;
 * one past TF_PY_PUSH_DEPTH frames is damage, and defines none of its
 * frames.
 */
#include "tf_test.h"

static const tf_header header = {
    .version_major = TF_VERSION_MAJOR, .version_minor = TF_VERSION_MINOR,
    .pid = 77, .ppid = 1, .wall_start_ns = 1, .mono_start_ns = 1,
    .cmdline = "py_push", .exe = "py_push", .hostname = "h", .tracer_version = "t",
    .settings = "", .python_version = "3.11",
};

#define DEEP 40

static tf_py_frame frame(uint32_t code, uint32_t line)
{
    return (tf_py_frame){ code, line };
}

/* A stack of n frames, innermost first: outer frames (code 1..) shared by
 * every stack of this test, the innermost one's line `inner`. */
static void make_stack(tf_py_frame *f, uint32_t n, uint32_t inner)
{
    for (uint32_t i = 0; i < n; i++)
        f[i] = frame(1 + (n - 1 - i) % 3, 100 + (n - 1 - i));
    f[0].line = inner;
}

/* The stack's frames walked one at a time (tf_reader_py_walk). */
static int walked(const tf_reader *r, uint32_t id, const tf_py_frame *want, uint32_t n)
{
    tf_py_walk w;
    tf_py_frame f;
    uint32_t depth, i = 0;
    if (!tf_reader_py_walk(r, id, &w, &depth) || depth != n)
        return 0;
    for (; tf_py_walk_next(&w, &f); i++)
        if (i >= n || f.code != want[i].code || f.line != want[i].line)
            return 0;
    return i == n;
}

/* Walked before the stack is made an array (through the pushes), as an
 * array, and walked again (through the array). */
static int same_frames(const tf_reader *r, uint32_t id, const tf_py_frame *want, uint32_t n)
{
    const tf_py_frame *f;
    uint32_t got;
    return walked(r, id, want, n) && tf_reader_py_stack(r, id, &f, &got) && got == n &&
           (n == 0 || memcmp(f, want, n * sizeof *f) == 0) && walked(r, id, want, n);
}

int main(void)
{
    tf_test_file file = tf_test_file_new();
    tf_chunk chunk = { 0 };
    tf_writer *w = tf_writer_new(&header);
    uint32_t s_file = tf_write_string(w, "app.py", 6), s_func = tf_write_string(w, "f", 1);
    for (int i = 0; i < 3; i++)
        CHECK(tf_write_py_code(w, s_file, s_func, 1 + (uint32_t)i) == (uint32_t)i + 1);

    /* A deep stack: one record, two or three bytes a frame. */
    tf_py_frame a[DEEP], b[DEEP], c[DEEP], mid[DEEP - 1];
    make_stack(a, DEEP, 7);
    size_t before = tf_writer_pending(w);
    uint32_t ida = tf_write_py_stack(w, a, DEEP);
    size_t cost_a = tf_writer_pending(w) - before;
    CHECK(ida == DEEP);                               /* one id per frame, the innermost last */
    CHECK(cost_a <= 3 * DEEP);                        /* 2.1: a record per frame, 6 bytes or more */

    /* Another stack under the same callers: one more small record, one more id. */
    make_stack(b, DEEP, 8);
    before = tf_writer_pending(w);
    uint32_t idb = tf_write_py_stack(w, b, DEEP);
    size_t cost_b = tf_writer_pending(w) - before;
    CHECK(idb == DEEP + 1);
    CHECK(cost_b > 0 && cost_b <= 8);

    /* One sharing a's 30 outer frames: its 10 others in one record, ids in
     * order from the outermost, each stack on the way given back. */
    make_stack(c, DEEP, 7);
    for (int i = 0; i < 10; i++)
        c[i].code = 3 - c[i].code / 3;                /* 1, 2, 3 -> 3, 3, 2 */
    uint32_t ids[DEEP];
    before = tf_writer_pending(w);
    uint32_t idc = tf_write_py_stack_push(w, 0, c, DEEP, ids);
    size_t cost_c = tf_writer_pending(w) - before;
    CHECK(idc == DEEP + 11 && ids[0] == idc && ids[9] == DEEP + 2);
    CHECK(ids[10] == DEEP - 10 && ids[DEEP - 1] == 1);
    CHECK(cost_c > 10 && cost_c <= 3 * 10 + 8);

    /* The same frames, named again whole or by a push: the same ids, no record. */
    before = tf_writer_pending(w);
    CHECK(tf_write_py_stack(w, a, DEEP) == ida);
    memcpy(mid, a + 1, sizeof mid);                   /* a's callers: a without its innermost */
    uint32_t idmid = tf_write_py_stack(w, mid, DEEP - 1);
    CHECK(idmid == DEEP - 1);
    CHECK(tf_write_py_stack_push(w, idmid, a, 1, NULL) == ida);
    CHECK(tf_write_py_stack_push(w, idmid, b, 1, NULL) == idb);
    CHECK(tf_write_py_stack_push(w, ids[10], c, 10, NULL) == idc);
    CHECK(tf_writer_pending(w) == before);

    /* The empty stack and one deeper than a chain may go: whole records. */
    uint32_t idempty = tf_write_py_stack(w, NULL, 0);
    static tf_py_frame huge[TF_PY_PUSH_DEPTH + 44];
    make_stack(huge, TF_PY_PUSH_DEPTH + 44, 9);
    uint32_t idhuge = tf_write_py_stack(w, huge, TF_PY_PUSH_DEPTH + 44);
    CHECK(idempty && idhuge && idempty != idhuge && idhuge != ida);
    CHECK(tf_write_py_stack(w, huge, TF_PY_PUSH_DEPTH + 44) == idhuge);

    tf_test_flush(w, file.fd, &chunk);

    /* Records no writer call makes, in a frame of their own: 2.1's pushes
     * (their ids written), a chain after them (its ids follow theirs),
     * one whose outer stack was never defined (nothing for a reader), one
     * after a whole stack, whose id it follows. */
    tf_write_string(w, "opens a frame", 13);
    static const uint8_t old_and_orphans[] = {
        TF_REC_PY_STACK_PUSH, 6, 0xe0, 0xd4, 0x03, 0, 1, 77,        /* 60000: (1,77) */
        TF_REC_PY_STACK_PUSH, 8, 0xe1, 0xd4, 0x03, 0xe0, 0xd4, 0x03, 2, 78, /* 60001 */
        TF_REC_PY_STACK_CHAIN, 7, 0, 1, 2, 3, 79, 1, 80,            /* 60002, 60003 */
        TF_REC_PY_STACK_CHAIN, 10, 5, 0x99, 0x4e, 3, 1, 1, 2, 2, 3, 3, /* 60009..11 from 50000 */
        TF_REC_PY_STACK, 6, 0xc8, 0xdc, 0x03, 1, 2, 5,              /* 61000, whole */
        TF_REC_PY_STACK_CHAIN, 5, 0, 0, 1, 3, 3,                    /* 61001: (3,3) */
    };
    tf_test_flush_with(w, file.fd, &chunk, old_and_orphans, sizeof old_and_orphans);

    /* The deepest stacks a reader takes, in a frame of their own: a chain
     * of one-frame pushes (as 2.1 wrote them) and a record of them all. */
    uint32_t chain = 0;
    static tf_py_frame deepest[TF_PY_PUSH_DEPTH], whole[TF_PY_PUSH_DEPTH];
    for (uint32_t i = 0; i < TF_PY_PUSH_DEPTH; i++) {
        deepest[TF_PY_PUSH_DEPTH - 1 - i] = frame(2, 1000 + i);
        chain = tf_write_py_stack_push(w, chain, &deepest[TF_PY_PUSH_DEPTH - 1 - i], 1, NULL);
        whole[i] = frame(1, 5000 + i);
    }
    uint32_t idwhole = tf_write_py_stack(w, whole, TF_PY_PUSH_DEPTH);
    tf_test_flush(w, file.fd, &chunk);
    /* One frame more, three frames of which the first two would fit, and
     * a chain whose outer stack would be its own id or after: the reader
     * counts each as damage (three frames corrupt). */
    uint32_t idtoo = tf_write_py_stack_push(w, chain, c, 1, NULL);
    tf_test_flush(w, file.fd, &chunk);
    uint32_t three[3];
    tf_write_py_stack_push(w, chain - 2, b, 3, three);
    tf_test_flush(w, file.fd, &chunk);
    tf_write_string(w, "opens a frame", 13);
    static const uint8_t own_outer[] = { TF_REC_PY_STACK_CHAIN, 7, 0x90, 0x4e, 0x90, 0x4e, 1, 1, 1 };
    tf_test_flush_with(w, file.fd, &chunk, own_outer, sizeof own_outer);
    tf_event ev = { .kind = TF_EV_MARK, .seq = 1, .t_ns = 10, .tid = 1, .py_stack = ida };
    tf_write_event(w, &ev);
    tf_event end = { .kind = TF_EV_END, .seq = 2, .t_ns = 11, .tid = 1 };
    tf_write_event(w, &end);
    tf_reader *r = tf_test_close_and_read(w, &file, &chunk);
    if (!r)
        return tf_test_done("py_push");
    tf_event got;
    CHECK(tf_reader_next(r, &got) == 1 && got.kind == TF_EV_MARK && got.py_stack == ida);
    CHECK(tf_reader_next(r, &got) == 1 && got.kind == TF_EV_END);
    /* A stack is made when first asked for: a's callers first, so that a's
     * and b's are made from their array, then the outermost frame alone,
     * made from its push though a deeper stack holds it. */
    CHECK(same_frames(r, idmid, mid, DEEP - 1));
    CHECK(same_frames(r, ida, a, DEEP));
    CHECK(same_frames(r, idb, b, DEEP));
    CHECK(same_frames(r, ida, a, DEEP));
    CHECK(same_frames(r, 1, a + DEEP - 1, 1));        /* the outermost frame alone */
    CHECK(same_frames(r, idempty, NULL, 0));
    CHECK(same_frames(r, idhuge, huge, TF_PY_PUSH_DEPTH + 44));
    CHECK(same_frames(r, chain, deepest, TF_PY_PUSH_DEPTH));
    CHECK(same_frames(r, idwhole, whole, TF_PY_PUSH_DEPTH));
    CHECK(same_frames(r, idwhole - 1, whole + 1, TF_PY_PUSH_DEPTH - 1));
    CHECK(same_frames(r, idc, c, DEEP));
    for (uint32_t i = 0; i < 10; i++)
        CHECK(same_frames(r, ids[i], c + i, DEEP - i));
    static const tf_py_frame old[] = { { 1, 80 }, { 3, 79 }, { 2, 78 }, { 1, 77 } };
    for (uint32_t i = 0; i < 4; i++)
        CHECK(same_frames(r, 60003 - i, old + i, 4 - i));
    static const tf_py_frame after_whole = { 3, 3 };
    CHECK(same_frames(r, 61001, &after_whole, 1));
    const tf_py_frame *f;
    uint32_t n;
    for (uint32_t id = 60004; id < 61000; id++)
        CHECK(!tf_reader_py_stack(r, id, &f, &n));
    CHECK(!tf_reader_py_stack(r, 10000, &f, &n));
    tf_py_walk none;
    CHECK(!tf_reader_py_walk(r, 10000, &none, &n) && !tf_reader_py_walk(r, idtoo, &none, &n));
    CHECK(!tf_reader_py_stack(r, idtoo, &f, &n));
    for (int i = 0; i < 3; i++)
        CHECK(!tf_reader_py_stack(r, three[i], &f, &n));
    const char *damage = tf_reader_damage(r);
    CHECK(damage && strstr(damage, "corrupt"));
    CHECK(tf_reader_status(r)->corrupt_frames == 3);
    tf_reader_close(r);
    close(file.fd);
    return tf_test_done("py_push");
}
