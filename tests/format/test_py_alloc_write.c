/*
 * test_py_alloc_write.c - tf_write_py_alloc, the recorder's way for the
 * py_alloc events of TRACE_PY_ALLOCS, writes what tf_write_event writes for
 * the same event: two writers are fed the same random stream of events,
 * one writing its py_allocs with tf_write_event, the other with
 * tf_write_py_alloc from an event whose kind, flags and the union past
 * u.host hold garbage (which tf_write_py_alloc may not read), and every
 * frame they seal must be the same bytes.
 */
#include "tf_test.h"

static const tf_header header = { .version_major = TF_VERSION_MAJOR, .pid = 7, .cmdline = "py_alloc" };

/* e as the recorder's py_alloc way hands it over: the common fields and
 * u.host set, everything else garbage. */
static tf_event as_recorder_fills(const tf_event *e)
{
    tf_event g;
    memset(&g, 0xa5, sizeof g);
    g.kind = 0xdeadbeef;
    g.seq = e->seq;
    g.tid = e->tid;
    g.t_ns = e->t_ns;
    g.parent = e->parent;
    g.native_stack = e->native_stack;
    g.py_stack = e->py_stack;
    g.u.host.domain = e->u.host.domain;
    g.u.host.ptr = e->u.host.ptr;
    g.u.host.size = e->u.host.size;
    g.u.host.api = e->u.host.api;
    return g;
}

/* What the recorder makes of a GC allocation: the same thread, times that
 * creep, addresses near the previous ones, a small size, stacks reused. */
static void like_the_recorder(uint64_t *s, tf_event *e, const tf_event *prev)
{
    uint64_t r = tf_test_rand(s);
    e->tid = r & 1 ? prev->tid : (uint32_t)(r >> 8) % 4 + 100;
    e->t_ns = prev->t_ns + (r >> 12) % 3000;
    e->parent = r & 2 ? 0 : e->seq - 1 - (r >> 20) % 50;
    e->native_stack = r & 4 ? 0 : (uint32_t)(r >> 28) % 40;
    e->py_stack = (uint32_t)(r >> 34) % 5000;
    e->u.host.domain = 3;   /* TF_HOST_OBJ */
    e->u.host.ptr = prev->u.host.ptr + (uint64_t)(int64_t)((int)((r >> 40) % 65536) - 32768) * 16;
    e->u.host.size = (r >> 44) % 600;
    e->u.host.api = r & 8 ? 0 : 2;
}

int main(void)
{
    tf_writer *generic = tf_writer_new(&header), *special = tf_writer_new(&header);
    CHECK(generic && special);
    tf_chunk a = { 0 }, b = { 0 };
    uint64_t s = 0x9e3779b97f4a7c15ull, seq = 0;
    tf_event prev;
    memset(&prev, 0, sizeof prev);
    prev.u.host.ptr = 0x7f0000100000ull;
    size_t frames = 0, py_allocs = 0, bytes = 0;
    for (int i = 0; i < 400000; i++) {
        tf_event e;
        uint64_t r = tf_test_rand(&s);
        /* Gaps in seq now and then: a py_frees record leaves the base at
         * its first free, and a writer may be handed any seq. */
        seq += r % 97 == 0 ? 1 + (r >> 8) % 1000 : 1;
        tf_test_random_event(&s, seq, &e);
        if (r % 10 < 7) {   /* most events py_allocs, as with TRACE_PY_ALLOCS */
            e.kind = TF_EV_PY_ALLOC;
            e.u.host.api = (uint32_t)tf_test_value(&s);
            if (r % 10 < 5)
                like_the_recorder(&s, &e, &prev);
        }
        if (e.kind == TF_EV_PY_ALLOC) {
            tf_write_event(generic, &e);
            tf_event g = as_recorder_fills(&e);
            tf_write_py_alloc(special, &g);
            py_allocs++;
        } else if (e.kind == TF_EV_PY_FREE) {
            /* What the recorder does with one (recorder.c, record_py_free). */
            tf_event f1 = e, f2 = e;
            if (!tf_write_py_free_joins(generic, &f1))
                tf_write_py_frees(generic, &f1);
            if (!tf_write_py_free_joins(special, &f2))
                tf_write_py_frees(special, &f2);
            CHECK(f1.t_ns == f2.t_ns);
        } else {
            tf_write_event(generic, &e);
            tf_write_event(special, &e);
        }
        prev = e;
        /* Frames of every size, so that frames open with a py_alloc too. */
        if (tf_test_rand(&s) % (r & 0x100 ? 50 : 5000) == 0 || i == 399999) {
            tf_writer_seal(generic, &a);
            tf_writer_seal(special, &b);
            CHECK(a.len == b.len);
            CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
            frames++;
            bytes += a.len;
        }
    }
    CHECK(py_allocs > 250000 && frames > 100);
    printf("%zu py_allocs in %zu frames, %zu bytes, the same both ways\n", py_allocs, frames, bytes);
    tf_chunk_free(&a);
    tf_chunk_free(&b);
    tf_writer_free(generic);
    tf_writer_free(special);
    return tf_test_done("format.py_alloc_write");
}
