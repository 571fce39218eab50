/*
 * test_roundtrip.c - every record type written, sealed over several frames,
 * read back field for field.
 */
#include "tf_test.h"

static const tf_header header = {
    .pid = 4242, .ppid = 1, .wall_start_ns = 1700000000123456789ull,
    .mono_start_ns = 987654321, .hostname = "gpu-host", .cmdline = "python app.py --x",
    .exe = "/usr/bin/python3", .tracer_version = "0.1.0", .settings = "depth=32;py=1",
    .python_version = NULL, .cuda_runtime_version = 13000, .cuda_driver_version = -5,
};

static const uint8_t build_id[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6,
                                      7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const tf_segment segs[2] = { { 0x0, 0x1000, 5 }, { 0x3000, 0x800, 6 } };

typedef struct ids {
    uint32_t s_empty, s_file, s_func, s_bin, s_type, s_mark;
    uint32_t native, native_empty, code, py, mod1, mod2;
    uint64_t native_ips[32];
} ids;

static void write_definitions(tf_writer *w, ids *d)
{
    d->s_empty = tf_write_string(w, "", 0);
    /* found again while the table holds no key bytes at all */
    CHECK(tf_write_string(w, "", 0) == d->s_empty);
    d->s_file = tf_write_string(w, "app.py", 6);
    d->s_func = tf_write_string(w, "train_step", 10);
    d->s_bin = tf_write_string(w, "a\0b", 3);
    d->s_type = tf_write_string(w, "numpy.ndarray", 13);
    d->s_mark = tf_write_string(w, "epoch 1", 7);
    CHECK(d->s_empty == 1 && d->s_mark == 6);
    CHECK(tf_write_string(w, "app.py", 6) == d->s_file);   /* interned */
    for (int i = 0; i < 32; i++)
        d->native_ips[i] = 0x7f0000001000ull + (uint64_t)(i * 977) - (i & 1 ? 0x500000 : 0);
    d->native = tf_write_native_stack(w, d->native_ips, 32);
    d->native_empty = tf_write_native_stack(w, NULL, 0);
    CHECK(tf_write_native_stack(w, d->native_ips, 32) == d->native);
    CHECK(d->native != d->native_empty);
    d->code = tf_write_py_code(w, d->s_file, d->s_func, 12);
    CHECK(tf_write_py_code(w, d->s_file, d->s_func, 12) == d->code);
    tf_py_frame frames[2] = { { d->code, 15 }, { d->code, 40 } };
    d->py = tf_write_py_stack(w, frames, 2);
    CHECK(tf_write_py_stack(w, frames, 2) == d->py);
    d->mod1 = tf_write_module_load(w, "/usr/lib/libfoo.so", 0x7f0000000000ull, build_id,
                                   sizeof build_id, segs, 2);
    d->mod2 = tf_write_module_load(w, "/opt/libbar.so", 0x10000, NULL, 0, NULL, 0);
    tf_write_thread(w, 1234, "main");
    tf_write_thread(w, 1235, "loader");
    tf_write_pool(w, 0, "cupy");
    tf_write_pool(w, 7, "torch");
    tf_write_info(w, "python_version", "3.12.1");
    tf_write_info(w, "gc_threshold", "700,10,10");
}

/* One event of each kind with arbitrary field values, then edge cases. */
static int make_events(const ids *d, tf_event *ev)
{
    int n = 0;
    for (size_t k = 0; k < TF_TEST_NKINDS; k++) {
        tf_event *e = &ev[n++];
        uint64_t s = 1000 + k;
        do
            tf_test_random_event(&s, 0, e);
        while (e->kind != tf_test_kinds[k]);
    }
    tf_event *e = &ev[n++];   /* the smallest event: everything zero */
    memset(e, 0, sizeof *e);
    e->kind = TF_EV_MARK;
    e = &ev[n++];             /* negative signed fields, stacks that exist */
    memset(e, 0, sizeof *e);
    e->kind = TF_EV_CUDA_ALLOC;
    e->tid = 1234;
    e->native_stack = d->native;
    e->py_stack = d->py;
    e->u.cuda.api = TF_API_cuMemCreate;
    e->u.cuda.device = -1;
    e->u.cuda.result = -2147483647 - 1;
    e->u.cuda.ptr = UINT64_MAX;
    e->u.cuda.size = UINT64_MAX;
    e = &ev[n++];
    memset(e, 0, sizeof *e);
    e->kind = TF_EV_PY_DOUBLE_INIT;
    e->u.double_init.obj = 0x7f1234567890ull;
    e->u.double_init.type_name = d->s_type;
    return n;
}

static void check_definitions(tf_reader *r, const ids *d)
{
    size_t len;
    const char *s = tf_reader_string(r, d->s_bin, &len);
    CHECK(s && len == 3 && memcmp(s, "a\0b", 3) == 0);
    s = tf_reader_string(r, d->s_empty, &len);
    CHECK(s && len == 0 && s[0] == '\0');
    CHECK(tf_reader_string(r, 999, &len) == NULL);
    const uint64_t *ips;
    uint32_t n;
    CHECK(tf_reader_native_stack(r, d->native, &ips, &n) && n == 32 &&
          memcmp(ips, d->native_ips, sizeof d->native_ips) == 0);
    CHECK(tf_reader_native_stack(r, d->native_empty, &ips, &n) && n == 0);
    const tf_py_frame *f;
    CHECK(tf_reader_py_stack(r, d->py, &f, &n) && n == 2 && f[0].code == d->code &&
          f[0].line == 15 && f[1].line == 40);
    const tf_py_code *c = tf_reader_py_code(r, d->code);
    CHECK(c && c->file == d->s_file && c->function == d->s_func && c->first_line == 12);
    const tf_module *m = tf_reader_module(r, d->mod1);
    CHECK(m && strcmp(m->path, "/usr/lib/libfoo.so") == 0 && m->base == 0x7f0000000000ull &&
          m->build_id_len == 20 && memcmp(m->build_id, build_id, 20) == 0 &&
          m->nsegments == 2 && m->segments[1].vaddr == 0x3000 &&
          m->segments[1].memsz == 0x800 && m->segments[1].flags == 6);
    CHECK(tf_reader_module_count(r) == 2);
    CHECK(strcmp(tf_reader_thread_name(r, 1235), "loader") == 0);
    CHECK(strcmp(tf_reader_pool_name(r, 7), "torch") == 0);
    CHECK(tf_reader_pool_name(r, 8) == NULL);
    uint32_t num;
    const char *name;
    CHECK(tf_reader_thread_count(r) == 2 && tf_reader_thread_at(r, 0, &num, &name) &&
          num == 1234 && strcmp(name, "main") == 0);
    CHECK(tf_reader_pool_count(r) == 2 && tf_reader_pool_at(r, 0, &num, &name) && num == 0);
    const char *key, *value;
    CHECK(tf_reader_info_count(r) == 2 && tf_reader_info(r, 1, &key, &value) &&
          strcmp(key, "gc_threshold") == 0 && strcmp(value, "700,10,10") == 0);
    CHECK(!tf_reader_info(r, 2, &key, &value));
}

static void check_header(const tf_header *h)
{
    CHECK(h->version_major == TF_VERSION_MAJOR && h->version_minor == TF_VERSION_MINOR);
    CHECK(h->pid == 4242 && h->ppid == 1 && h->wall_start_ns == header.wall_start_ns &&
          h->mono_start_ns == header.mono_start_ns);
    CHECK(strcmp(h->cmdline, header.cmdline) == 0 && strcmp(h->settings, header.settings) == 0);
    CHECK(strcmp(h->python_version, "") == 0);
    CHECK(h->cuda_runtime_version == 13000 && h->cuda_driver_version == -5);
}

int main(void)
{
    tf_test_file file = tf_test_file_new();
    tf_chunk chunk = { 0 };
    tf_writer *w = tf_writer_new(&header);
    ids d;
    write_definitions(w, &d);
    tf_event ev[64];
    int n = make_events(&d, ev);
    uint64_t seq = 0, t = 5000;
    for (int i = 0; i < n; i++) {
        ev[i].seq = ++seq;
        if (i == 3)
            ev[i].seq = seq += 10;  /* a gap (a dropped event) survives */
        ev[i].t_ns = t = i == 5 ? t - 100 : t + 250;  /* time may step back */
        if (i % 4 == 1)
            tf_test_flush(w, file.fd, &chunk);
        tf_write_event(w, &ev[i]);
    }
    tf_write_module_unload(w, d.mod1);
    tf_event end = { .kind = TF_EV_END, .seq = ++seq, .t_ns = t + 1 };
    tf_write_event(w, &end);
    tf_reader *r = tf_test_close_and_read(w, &file, &chunk);
    if (!r)
        return tf_test_done("roundtrip");
    check_header(tf_reader_header(r));
    tf_event got;
    for (int i = 0; i < n; i++) {
        CHECK(tf_reader_next(r, &got) == 1);
        if (i == 3)   /* the reader flags the event after the gap */
            ev[i].flags |= TF_EVENT_AFTER_GAP;
        CHECK(memcmp(&got, &ev[i], sizeof got) == 0);
        if (i == 0) {
            const tf_module *m = tf_reader_module_for(r, 0x7f0000003400ull);
            CHECK(m && m->id == d.mod1);
            CHECK(tf_reader_module_for(r, 0x7f0000002000ull) == NULL);
        }
    }
    CHECK(tf_reader_next(r, &got) == 1 && got.kind == TF_EV_END);
    CHECK(got.u.end.events == (uint64_t)n && got.u.end.strings == 6 &&
          got.u.end.native_stacks == 2 && got.u.end.py_stacks == 2);   /* a push per frame */
    CHECK(got.u.end.frames == tf_reader_status(r)->frames);
    CHECK(tf_reader_module_for(r, 0x7f0000003400ull) == NULL);  /* unloaded */
    CHECK(tf_reader_module(r, d.mod1) != NULL);                  /* still known */
    CHECK(tf_reader_next(r, &got) == 0);
    check_definitions(r, &d);
    const tf_read_status *st = tf_reader_status(r);
    CHECK(st->clean_end && !st->truncated && st->corrupt_frames == 0);
    CHECK(st->events == (uint64_t)n + 1 && st->last_seq == seq);
    CHECK(tf_reader_damage(r) == NULL);
    tf_reader_close(r);
    return tf_test_done("roundtrip");
}
