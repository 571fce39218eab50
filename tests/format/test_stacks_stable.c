/*
 * test_stacks_stable.c - the frames render/stacks.c hands out stay where
 * they are while later stacks are resolved (stacks.h: valid until
 * rn_stacks_free).  Its frame arrays grew with realloc, which moved the
 * frames of every stack resolved before: a caller holding a stack's frames
 * while it resolved another read freed memory.
 */
#include "stacks.h"
#include "tf_test.h"

static const tf_header header = {
    .version_major = TF_VERSION_MAJOR, .version_minor = TF_VERSION_MINOR,
    .pid = 77, .ppid = 1, .wall_start_ns = 1, .mono_start_ns = 1,
    .cmdline = "stacks_stable", .exe = "stacks_stable", .hostname = "h", .tracer_version = "t",
    .settings = "", .python_version = "3.11",
};

#define STACKS 5000     /* 10000 distinct frames of each kind: the arrays grow many times */

int main(void)
{
    tf_test_file file = tf_test_file_new();
    tf_chunk chunk = { 0 };
    tf_writer *w = tf_writer_new(&header);
    uint32_t native[STACKS], py[STACKS];
    uint32_t s_file = tf_write_string(w, "app.py", 6), s_func = tf_write_string(w, "f", 1);
    uint32_t code = tf_write_py_code(w, s_file, s_func, 1);
    for (uint32_t i = 0; i < STACKS; i++) {
        uint64_t ips[2] = { 0x400000 + 16 * (uint64_t)i, 0x800000 + 16 * (uint64_t)i };
        native[i] = tf_write_native_stack(w, ips, 2);
        tf_py_frame frames[2] = { { code, 2 * i + 1 }, { code, 2 * i + 2 } };
        py[i] = tf_write_py_stack(w, frames, 2);
    }
    tf_event end = { .kind = TF_EV_END, .seq = 1, .t_ns = 10, .tid = 1 };
    tf_write_event(w, &end);
    tf_reader *r = tf_test_close_and_read(w, &file, &chunk);
    if (!r)
        return tf_test_done("stacks_stable");
    tf_event got;
    CHECK(tf_reader_next(r, &got) == 1 && got.kind == TF_EV_END);   /* the definitions read */
    rn_stacks *s = rn_stacks_new(r, NULL, 0);

    const rn_native_frame *first[2], *again[2];
    const rn_py_frame *pfirst[2], *pagain[2];
    CHECK(rn_stacks_native(s, native[0], first, 2) == 2);
    CHECK(rn_stacks_py(s, py[0], pfirst, 2) == 2);
    for (uint32_t i = 1; i < STACKS; i++) {
        const rn_native_frame *f[2];
        const rn_py_frame *p[2];
        CHECK(rn_stacks_native(s, native[i], f, 2) == 2 && f[0]->ip == 0x400000 + 16 * (uint64_t)i);
        CHECK(rn_stacks_py(s, py[i], p, 2) == 2 && p[0]->line == 2 * i + 1);
    }
    /* The first stack's frames: where they were, and still its own. */
    CHECK(first[0]->ip == 0x400000 && first[1]->ip == 0x800000);
    CHECK(pfirst[0]->line == 1 && pfirst[1]->line == 2);
    CHECK(rn_stacks_native(s, native[0], again, 2) == 2 && again[0] == first[0] && again[1] == first[1]);
    CHECK(rn_stacks_py(s, py[0], pagain, 2) == 2 && pagain[0] == pfirst[0] && pagain[1] == pfirst[1]);

    rn_stacks_free(s);
    tf_reader_close(r);
    return tf_test_done("stacks_stable");
}
